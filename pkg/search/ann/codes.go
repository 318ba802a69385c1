package ann

import (
	"container/heap"
	"math"
	"math/bits"
	"slices"
	"sync"
)

// blockSize is the number of vectors a block kernel computes at once, and
// that one word of an eligibility bitset covers.
const blockSize = 64

// codeLanes is the number of vectors of a code block (a multiple of
// blockSize), so that a block's column (one component of its vectors) is
// codeLanes adjacent bytes. A variable: tests and benchmarks build stores
// of other widths to compare.
var codeLanes = 1024

// superBlocks is the most blocks one allocation (a superblock) holds.
// Within a superblock of g blocks a column is g·lanes adjacent bytes, the
// column's part of block j of the superblock at j·lanes: a scan of the
// superblock's blocks in order reads each of the query's columns as one
// stream. With a separate allocation per block (issue 23, before) each
// block's column was its own 1 KiB stream on a page of its own, so a
// sparse query's 36 columns cost 36 TLB misses and restarts of the
// prefetcher per 1,024 vectors: 4.0-4.4 ms of CPU per scan of 300 k
// random vectors, against 1.6-2.6 in superblocks of 8 to 64 blocks and
// 1.7-2.4 in blocks of 64 Ki vectors (three rounds, load 25). The
// superblocks grow (1, 1, 2, 4, ... blocks up to superBlocks), so a small
// store stays small and at most one superblock (24 MiB at 768
// dimensions) is partly empty. A variable: tests and benchmarks compare.
var superBlocks = 32

// Codes holds int8-quantised vectors of one dimension for exact scans,
// laid out by dimension within blocks of c.lanes vectors: component i of
// the block's vectors are c.lanes adjacent bytes. A sparse query (a short
// text's hash vector: a few dozen non-zero components) then reads a few
// dozen columns per block instead of every vector whole, and a dense one
// streams through the blocks. A scan adds each column the query needs into
// the block's sums (scanPart): with blocks of 64 vectors a column was one
// cache line, and a sparse query's few dozen lines per block, spread over
// the block's 48 KiB and 12 pages, each cost a cache and often a TLB miss
// (issue 23: ~1.5 µs per 64 vectors, the whole of a vector search's CPU at
// 1 M documents); a column of 1,024 vectors is 16 lines read in order,
// and the blocks of a superblock (superBlocks) put their columns side by
// side, so a scan streams each column through many blocks. A block's
// bytes are therefore not contiguous: codeBlock gives its stride.
// Vectors are numbered from 0 in the order they are appended; deletions
// are the caller's (Scan's accept). The codes live in memory; full blocks
// can be persisted and loaded as records (codesfile.go), which hold the
// width: a record of another width is refused (and the codes quantised
// again), so the width is a format of those records.
//
// A store laid out ByVector (NewCodesLayout) holds the same blocks with
// each vector's codes adjacent instead (component i of lane l at
// l·dim+i): a dense query's scan then reads only the vectors it scores,
// so a filtered scan costs what the filter admits (below, Layout).
//
// Concurrency: Scans run concurrently with each other and with one
// Append at a time.
type Codes struct {
	dim    int
	lanes  int
	layout Layout

	mu     sync.RWMutex
	blocks []codeBlock
	scale  []float32 // v ≈ scale·code
	sqn    []float32 // squared norm of the dequantised vector
	supers int       // blocks of the superblocks allocated, for its last one's room (newBlock)
	super  []int8    // the last superblock
	next   int       // its blocks handed out
	alloc  int64     // bytes of the superblocks
}

// Layout is how a store's blocks order their codes.
type Layout uint8

const (
	// ByDimension: a block's column (one component of its vectors) is
	// adjacent bytes. A sparse query (the hash embedder's: a few dozen
	// non-zero components) reads only its columns, but a block holding
	// one eligible vector is read whole by a dense query, so a filtered
	// dense scan costs what the unfiltered one does once the eligible
	// vectors are spread over the blocks (a 1 % filter: half the groups
	// of 64).
	ByDimension Layout = iota
	// ByVector: a block is cut in tiles of tileSize components (the
	// last narrower), and in a tile each vector's codes are adjacent
	// bytes: a vector is scored by one dot product of
	// the dense query with its codes in the tiles where the query has a
	// non-zero component (dotTilesKernel). An unfiltered scan reads the
	// same bytes as ByDimension, a filtered one only the eligible
	// vectors' lines. Tiles rather than whole vectors: a short query of
	// the use embedder has no lexical part (612 of the blend's 1,380
	// components are non-zero), and reading 612 bytes of every 1,380 of
	// whole vectors cost ~50 % more CPU than reading them packed (the
	// prefetcher fetches the lines skipped; scratch benchmark, 45,000
	// vectors: 35.5 against 23.6 ms). A sparse query still works (it
	// reads a byte per non-zero component of each vector) but costs more
	// than ByDimension: the layout for sets whose queries are dense.
	//
	// Its numeric value is 2: 1 is ByVector128, the tiles of the records
	// written before.
	ByVector Layout = 2
	// ByVector128 is ByVector in tiles of 128 components, the layout of
	// the block records that binaries up to main 1b196c6 wrote, before
	// the tiles grew to tileSize. AppendBlockFrom reads such records
	// (converting them); no store is laid out so (NewCodesLayout takes it
	// as ByVector).
	ByVector128 Layout = 1
)

func (l Layout) String() string {
	switch l {
	case ByVector:
		return "by-vector"
	case ByVector128:
		return "by-vector-128"
	}
	return "by-dimension"
}

// tile returns the ByVector tile width of records laid out as l (0: l
// is ByDimension).
func (l Layout) tile() int {
	switch l {
	case ByVector:
		return tileSize
	case ByVector128:
		return 128
	}
	return 0
}

// tileSize is the components of a ByVector tile: ten cache lines of a
// vector's codes, as many components as a short query of the use blend
// has non-zero (its first 612 of 1,380: the semantic and GloVe parts),
// so such a query reads each vector it scores as one span of 640 bytes,
// and a whole query three (640, 640 and the last 100). A filtered scan
// reads the eligible vectors scattered: in tiles of 128 a short query's
// vector was five line pairs 128 KiB apart, five streams the prefetcher
// restarts on; in one tile the ten lines are adjacent
// (BenchmarkCodesPrefetch, 1 M vectors, tiles of 128 and of 640 one after
// the other, twice, AMD EPYC, 2026-11-27g: a random 10 % 12.0-12.8 -> 6.9-7.7 ms of
// CPU, runs of 10 in 100 10.4-11.4 -> 7.1-8.1, 1 % 1.3-1.7 -> 1.0-1.5),
// and an unfiltered scan reads one stream per tile instead of five
// (BenchmarkCodesDenseLayout, 100 k vectors: a short query 11.0-12.4 ->
// 5.3-5.5 ms, a whole one 14.4-15.7 -> 9.8-10.2). On an earlier VM tiles of
// 128 had measured best (of 64, 128 and 256, against ByDimension); the
// records written then are read as ByVector128.
const tileSize = 640

// codeBlock is a block's codes in its superblock: by dimension,
// component d of its vector in lane l is b[d·stride+l]; by vector (dim
// set), the block is its tiles one after another, tile t holding
// components [tileSize·t, tileSize·t+w) of its lanes vectors, w bytes a
// lane.
type codeBlock struct {
	b      []int8
	stride int
	// dim, lanes and tile (the tile width: tileSize, or 128 for a
	// ByVector128 record's): ByVector.
	dim, lanes, tile int
}

// at is the offset of component d of lane l.
func (b codeBlock) at(d, l int) int {
	if b.dim == 0 {
		return d*b.stride + l
	}
	t := d / b.tile
	return t*b.tile*b.lanes + l*min(b.tile, b.dim-t*b.tile) + d%b.tile
}

// tileSpan returns where tile t of a vector of dim components lies in a
// ByVector block of lanes vectors, the vector in lane: its codes are the
// block's [off, off+w), paired with the query's components [lo, lo+w).
// (codeBlock.at is its one-component form, for a block of any tile
// width.)
func tileSpan(t int32, lane, lanes, dim int) (lo, w, off int) {
	lo = int(t) * tileSize
	w = min(tileSize, dim-lo)
	return lo, w, lo*lanes + lane*w
}

// newBlock returns the store's next block, in the last superblock or a
// new one. The caller holds mu (or owns the store).
func (c *Codes) newBlock() codeBlock {
	L := c.lanes
	g := len(c.super) / max(1, c.dim*L)
	if c.next == g {
		g = min(max(superBlocks, 1), max(1, len(c.blocks)))
		c.super = make([]int8, c.dim*g*L)
		adviseHuge(c.super)
		c.next = 0
		c.alloc += int64(len(c.super))
	}
	var b codeBlock
	if c.layout == ByVector {
		// Blocks one after another.
		b = codeBlock{b: c.super[c.next*L*c.dim : (c.next+1)*L*c.dim], dim: c.dim, lanes: L, tile: tileSize}
	} else {
		b = codeBlock{b: c.super[c.next*L:], stride: g * L}
	}
	c.next++
	return b
}

// NewCodes returns an empty store for vectors of dim values, laid out by
// dimension.
func NewCodes(dim int) *Codes { return NewCodesLayout(dim, ByDimension) }

// NewCodesLayout returns an empty store for vectors of dim values laid
// out as l.
func NewCodesLayout(dim int, l Layout) *Codes {
	if l == ByVector128 {
		l = ByVector
	}
	return &Codes{dim: dim, lanes: codeLanes, layout: l}
}

// Layout returns how the store's blocks order their codes.
func (c *Codes) Layout() Layout { return c.layout }

// Len returns the number of vectors.
func (c *Codes) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.scale)
}

// Bytes returns the memory the codes take.
func (c *Codes) Bytes() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.alloc + 8*int64(len(c.scale))
}

// Append quantises v (of the store's dimension) and returns its number.
func (c *Codes) Append(v []float32) int32 {
	code, scale, sqn := quantize(make([]int8, 0, c.dim), v)
	c.mu.Lock()
	defer c.mu.Unlock()
	id := len(c.scale)
	lane := id % c.lanes
	if lane == 0 {
		c.blocks = append(c.blocks, c.newBlock())
	}
	b := c.blocks[len(c.blocks)-1]
	for i, x := range code {
		b.b[b.at(i, lane)] = x
	}
	c.scale = append(c.scale, scale)
	c.sqn = append(c.sqn, sqn)
	return int32(id)
}

// AppendFrom appends n vectors read through vec (vector i for i from 0),
// quantised by workers goroutines, each a share of the blocks: a store
// being loaded from its file at start-up. It is Append's result for each
// vector.
func (c *Codes) AppendFrom(n int, vec func(int32) []float32, workers int) {
	c.mu.Lock()
	base := len(c.scale)
	if base%c.lanes != 0 || workers < 2 || n < 2*c.lanes {
		c.mu.Unlock()
		for i := range int32(n) {
			c.Append(vec(i))
		}
		return
	}
	defer c.mu.Unlock()
	L := c.lanes
	nb := (n + L - 1) / L
	first := len(c.blocks)
	for range nb {
		c.blocks = append(c.blocks, c.newBlock())
	}
	c.scale = append(c.scale, make([]float32, n)...)
	c.sqn = append(c.sqn, make([]float32, n)...)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := make([]int8, 0, c.dim)
			for bi := nb * w / workers; bi < nb*(w+1)/workers; bi++ {
				b := c.blocks[first+bi]
				for lane := range min(L, n-bi*L) {
					i := bi*L + lane
					var scale, sqn float32
					code, scale, sqn = quantize(code[:0], vec(int32(i)))
					for d, x := range code {
						b.b[b.at(d, lane)] = x
					}
					c.scale[base+i], c.sqn[base+i] = scale, sqn
				}
			}
		}()
	}
	wg.Wait()
}

// Clear overwrites vector id's code with zeros (and its scale and norm):
// nothing of the vector it held stays. It remains numbered; a scan
// should not accept it.
func (c *Codes) Clear(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id < 0 || int(id) >= len(c.scale) {
		return
	}
	b, lane := c.blocks[int(id)/c.lanes], int(id)%c.lanes
	for i := range c.dim {
		b.b[b.at(i, lane)] = 0
	}
	c.scale[id], c.sqn[id] = 0, 0
}

// Scan returns the k vectors nearest to q by quantised distance among
// those accept admits (all when accept is nil), nearest first. ids, when
// not nil, limits the scan to those vectors (sorted ascending): the
// documents a selective filter admits.
func (c *Codes) Scan(q *Query, k int, accept func(id int32) bool, ids []int32) []Result {
	return c.ScanPart(q, k, accept, ids, 0, 1)
}

// ScanPart is Scan over part of the blocks (part of parts, from 0), for
// scans split among goroutines; with ids it scans part of the ids.
func (c *Codes) ScanPart(q *Query, k int, accept func(id int32) bool, ids []int32, part, parts int) []Result {
	return c.scanPart(q, k, accept, ids, nil, part, parts)
}

// ScanEligible is ScanPart over the vectors set in elig only, a bitset of
// vector numbers (bit id&63 of word id>>6). A word is a block's lanes, so
// a block none of whose vectors is eligible is skipped unread and the
// others' ineligible lanes are masked out with one AND: the cost is that
// of the blocks holding an eligible vector, with no per-vector callback.
// Its result is ScanPart's with accept admitting exactly elig's vectors.
func (c *Codes) ScanEligible(q *Query, k int, elig []uint64, part, parts int) []Result {
	if elig == nil {
		elig = []uint64{}
	}
	return c.scanPart(q, k, nil, nil, elig, part, parts)
}

func (c *Codes) scanPart(q *Query, k int, accept func(id int32) bool, ids []int32, elig []uint64, part, parts int) []Result {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(q.v) != c.dim || k <= 0 {
		return nil
	}
	var res maxHeap
	var sums [blockSize]float32
	offerD := func(id int32, d float32) {
		if len(res) == k && !less(cand{id: id, d: d}, res[0]) {
			return
		}
		if accept != nil && !accept(id) {
			return
		}
		if len(res) < k {
			heap.Push(&res, cand{id: id, d: d})
		} else {
			res[0] = cand{id: id, d: d}
			heap.Fix(&res, 0)
		}
	}
	offer := func(id int32, dot float32) {
		offerD(id, sqDist(q.norm, c.sqn[id], c.scale[id]*dot))
	}
	n, L := len(c.scale), c.lanes
	if c.layout == ByVector {
		c.scanVectors(q, ids, elig, part, parts, offer)
	} else if ids != nil {
		ids = ids[len(ids)*part/parts : len(ids)*(part+1)/parts]
		code := make([]int8, c.dim)
		for _, id := range ids {
			if int(id) >= n {
				break
			}
			b, lane := c.blocks[int(id)/L], int(id)%L
			if q.sparse {
				var s float32
				for j, i := range q.idx {
					s += q.val[j] * float32(b.b[int(i)*b.stride+lane])
				}
				offer(id, s)
				continue
			}
			for i := range code {
				code[i] = b.b[i*b.stride+lane]
			}
			offer(id, q.dot(code))
		}
	} else {
		idx, val := q.idx, q.val
		if !q.sparse {
			idx, val = q.nzIdx()
		}
		kn := kern
		var colSums []float32
		// group offers the vectors of group g (blockSize lanes from
		// lane g·blockSize) of block bi that are eligible (lanesOK) and
		// nearer than the heap's worst; their distances are computed by
		// the block kernel, or finished from the column sums (wide).
		group := func(bi, g int, b codeBlock, lanesOK uint64, wide bool) {
			base := bi*L + g*blockSize
			lanes := min(blockSize, n-base)
			worst := float32(math.Inf(1))
			if len(res) == k {
				worst = res[0].d
			}
			var mask uint64
			switch {
			case wide:
				mask = kn.finish(&sums, (*[blockSize]float32)(colSums[g*blockSize:]), c.scale[base:base+blockSize], c.sqn[base:base+blockSize], q.norm, worst)
			case lanes == blockSize:
				mask = kn.block(&sums, b.b[g*blockSize:], b.stride, idx, val, c.scale[base:base+blockSize], c.sqn[base:base+blockSize], q.norm, worst)
			default:
				// The last vectors, fewer than a group: as before the
				// columns, by the portable kernel.
				mask = blockDistances(&sums, b.b[g*blockSize:], b.stride, idx, val, c.scale[base:base+lanes], c.sqn[base:base+lanes], q.norm, worst)
			}
			mask &= lanesOK
			for ; mask != 0; mask &= mask - 1 {
				l := bits.TrailingZeros64(mask)
				offerD(int32(base+l), sums[l])
			}
		}
		var eligWords []uint64
		if elig != nil {
			eligWords = make([]uint64, 0, L/blockSize)
		}
		lo, hi := len(c.blocks)*part/parts, len(c.blocks)*(part+1)/parts
		for bi := lo; bi < hi; bi++ {
			b := c.blocks[bi]
			used := min(L, n-bi*L)
			full := used / blockSize
			// The groups with an eligible vector, as eligibility words.
			words := []uint64(nil)
			active := full
			if elig != nil {
				w0 := bi * L / blockSize
				words = eligWords[:0]
				active = 0
				for g := range (used + blockSize - 1) / blockSize {
					w := uint64(0)
					if w0+g < len(elig) {
						w = elig[w0+g]
					}
					words = append(words, w)
					if g < full && w != 0 {
						active++
					}
				}
			}
			lanesOK := func(g int) uint64 {
				if words == nil {
					return math.MaxUint64
				}
				return words[g]
			}
			// Wide: the columns' sums of every full group at once,
			// reading each column in order; worth it when a good part
			// of the groups is to be computed, otherwise only the
			// eligible groups' lines are read.
			wide := full > 0 && active*wideShare >= full
			if wide {
				if colSums == nil {
					colSums = make([]float32, L)
				}
				cs := colSums[:full*blockSize]
				clear(cs)
				for j, i := range idx {
					off := int(i) * b.stride
					kn.column(cs, val[j], b.b[off:off+full*blockSize])
				}
			}
			for g := range (used + blockSize - 1) / blockSize {
				ok := lanesOK(g)
				if ok == 0 {
					continue
				}
				group(bi, g, b, ok, wide && g < full)
			}
		}
	}
	out := []cand(res)
	sortCands(out)
	rs := make([]Result, len(out))
	for i, x := range out {
		rs[i] = Result{ID: x.id, Dist: x.d}
	}
	return rs
}

// scanVectors is scanPart over a store laid out ByVector: each vector
// the scan admits (ids, elig's bits, or every vector of the part's
// blocks) is scored by one dot product of the query with its codes, so a
// filtered scan reads and computes only the eligible vectors (accept,
// when not nil, is asked by offer of those nearer than the worst kept).
// The caller holds mu.
func (c *Codes) scanVectors(q *Query, ids []int32, elig []uint64, part, parts int, offer func(id int32, dot float32)) {
	n, L := len(c.scale), c.lanes
	dot := func(id int) float32 {
		b, lane := c.blocks[id/L], id%L
		if q.sparse {
			var s float32
			for j, i := range q.idx {
				s += q.val[j] * float32(b.b[b.at(int(i), lane)])
			}
			return s
		}
		return dotTilesKernel(q.v, b.b, lane, L, q.tiles)
	}
	if ids != nil {
		for _, id := range ids[len(ids)*part/parts : len(ids)*(part+1)/parts] {
			if int(id) >= n {
				break
			}
			offer(id, dot(int(id)))
		}
		return
	}
	lo, hi := len(c.blocks)*part/parts*L, min(n, len(c.blocks)*(part+1)/parts*L)
	if elig == nil {
		for id := lo; id < hi; id++ {
			offer(int32(id), dot(id))
		}
		return
	}
	// lo is a multiple of the block's lanes, so of a word's 64. Dense,
	// the eligible vectors are scored two at a time (dotTiles2Kernel),
	// offered in order, and the lines of the vector prefetchAhead
	// eligible vectors on are prefetched (ahead): the scan no longer
	// waits for each scattered vector's lines.
	pair := dotTiles2Kernel != nil && !q.sparse
	cur := eligCursor{elig: elig, w: lo/64 - 1, hi: hi}
	ahead := cur
	fetch := func() {
		if id := ahead.next(); id >= 0 {
			c.prefetch(q, id)
		}
	}
	if !q.sparse {
		for range prefetchAhead {
			fetch()
		}
	}
	pending := -1
	for {
		id := cur.next()
		if id < 0 {
			break
		}
		if prefetchAhead > 0 && !q.sparse {
			fetch()
		}
		if !pair {
			offer(int32(id), dot(id))
			continue
		}
		if pending < 0 {
			pending = id
			continue
		}
		b1, b2 := c.blocks[pending/L], c.blocks[id/L]
		d1, d2 := dotTiles2Kernel(q.v, b1.b, pending%L, b2.b, id%L, L, q.tiles)
		offer(int32(pending), d1)
		offer(int32(id), d2)
		pending = -1
	}
	if pending >= 0 {
		offer(int32(pending), dot(pending))
	}
}

// qdistLocked returns the squared distance of dense query q to vector id
// of a ByVector store by its codes (a graph walk's, SearchOptions.Codes);
// the caller holds mu.
func (c *Codes) qdistLocked(q *Query, id int32) float32 {
	b, lane := c.blocks[int(id)/c.lanes], int(id)%c.lanes
	dot := dotTilesKernel(q.v, b.b, lane, c.lanes, q.tiles)
	return sqDist(q.norm, c.sqn[id], c.scale[id]*dot)
}

// hugeCodes is whether the superblocks ask for transparent huge pages
// (adviseHuge). A variable: benchmarks compare.
var hugeCodes = true

// prefetchAhead is how many eligible vectors ahead a filtered dense scan
// of a ByVector store prefetches (scanVectors); 0 prefetches none. A
// variable: benchmarks compare.
var prefetchAhead = 8

// prefetch asks for vector id's codes in the query's tiles
// (prefetchTile: two cache lines a call, a tile's ten in five).
func (c *Codes) prefetch(q *Query, id int) {
	b, lane := c.blocks[id/c.lanes], id%c.lanes
	for _, t := range q.tiles {
		_, w, off := tileSpan(t, lane, c.lanes, c.dim)
		for i := 0; i < w; i += 128 {
			prefetchTile(&b.b[off+i])
		}
	}
}

// eligCursor walks the vector numbers set in a bitset, in order, below
// hi: next returns the next one, or -1.
type eligCursor struct {
	elig []uint64
	w    int    // the word of word's bits
	word uint64 // its bits not yet returned
	hi   int
}

func (e *eligCursor) next() int {
	for e.word == 0 {
		e.w++
		if e.w >= len(e.elig) || e.w*64 >= e.hi {
			return -1
		}
		e.word = e.elig[e.w]
	}
	id := e.w*64 + bits.TrailingZeros64(e.word)
	e.word &= e.word - 1
	if id >= e.hi {
		e.word, e.w = 0, len(e.elig)
		return -1
	}
	return id
}

// dotTilesKernel returns v·code for a dense query v and the codes of
// lane lane of a ByVector block b of lanes lanes (of v's length), over
// the tiles listed (those where v has a non-zero component):
// dotTilesPortable, or with GOEXPERIMENT=simd a 16-lane kernel on an
// AVX-512 CPU (codes_simd.go), an 8-lane one on a CPU with AVX2 and FMA
// only (codes_avx2.go). The sums' order is not that of the ByDimension
// kernels: distances agree to float32 rounding.
var dotTilesKernel = dotTilesPortable

// dotTiles2Kernel, when not nil, is dotTilesKernel of two vectors at once
// (lane1 of block codes b1, lane2 of b2), each result bit for bit
// dotTilesKernel's: a filtered scan's eligible vectors lie scattered over
// the blocks, ten cache lines apiece for a short query, and one vector at
// a time the scan waits for each vector's lines in turn (codes_simd.go,
// codes_avx2.go).
var dotTiles2Kernel func(v []float32, b1 []int8, lane1 int, b2 []int8, lane2 int, lanes int, tiles []int32) (float32, float32)

// dotTilesPortable is dotTilesKernel in plain Go, eight sums at a time,
// each code's value read from codeValue (a load instead of an integer to
// float conversion, the loop's bottleneck: ~10 % less CPU than
// converting in four sums, on par with the ByDimension portable kernel
// per component).
func dotTilesPortable(v []float32, b []int8, lane, lanes int, tiles []int32) float32 {
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for _, t := range tiles {
		lo, w, off := tileSpan(t, lane, lanes, len(v))
		code, q := b[off:off+w], v[lo:lo+w]
		i := 0
		for ; i+8 <= w; i += 8 {
			c, x := (*[8]int8)(code[i:]), (*[8]float32)(q[i:])
			s0 += x[0] * codeValue[uint8(c[0])]
			s1 += x[1] * codeValue[uint8(c[1])]
			s2 += x[2] * codeValue[uint8(c[2])]
			s3 += x[3] * codeValue[uint8(c[3])]
			s4 += x[4] * codeValue[uint8(c[4])]
			s5 += x[5] * codeValue[uint8(c[5])]
			s6 += x[6] * codeValue[uint8(c[6])]
			s7 += x[7] * codeValue[uint8(c[7])]
		}
		for ; i < w; i++ {
			s0 += q[i] * codeValue[uint8(code[i])]
		}
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// codeValue is the float32 of each code, by its byte.
var codeValue = func() (t [256]float32) {
	for i := range t {
		t[i] = float32(int8(uint8(i)))
	}
	return t
}()

// wideShare: a block's column sums are computed at once (wide) when at
// least 1/wideShare of its groups hold an eligible vector.
const wideShare = 4

// kernels are the scan's arithmetic: block computes a full group's
// distances (blockDistances' contract); column and finish compute a
// block's column sums (addColumns) and a full group's distances from them
// (finishDistances), with the same operations in the same order as block,
// so both ways give the same distances bit for bit. Vector kernels
// replace them where the CPU has them (codes_simd.go: AVX-512;
// codes_avx2.go: AVX2 and FMA).
type kernelSet struct {
	name   string
	block  func(d *[blockSize]float32, b []int8, stride int, idx []int32, val []float32, scale, sqn []float32, qn, worst float32) uint64
	column func(sums []float32, w float32, col []int8)
	finish func(d *[blockSize]float32, sums *[blockSize]float32, scale, sqn []float32, qn, worst float32) uint64
}

// portableKernels are the kernels in plain Go.
var portableKernels = kernelSet{"go", blockDistances, addColumns, finishDistances}

// kern is the kernels scans use; kernelName names them (benchmarks).
var (
	kern       = portableKernels
	kernelName = "go"
)

// blockDistances stores in d the quantised squared distances of a group's
// lanes (len(scale) of them) to the query whose non-zero components are
// idx and val and whose squared norm is qn: max(0, qn + sqn − 2·scale·
// (q·code)). b holds the group's first lane, its columns stride bytes
// apart. It returns a mask of the lanes whose distance is below worst.
// The columns are read only at the query's non-zero components.
func blockDistances(d *[blockSize]float32, b []int8, stride int, idx []int32, val []float32, scale, sqn []float32, qn, worst float32) uint64 {
	*d = [blockSize]float32{}
	for j, i := range idx {
		addColumn(d, val[j], (*[blockSize]int8)(b[int(i)*stride:]))
	}
	return finishDistances(d, d, scale, sqn, qn, worst)
}

// finishDistances is blockDistances from the group's sums (q·code of each
// lane): d may be sums.
func finishDistances(d *[blockSize]float32, sums *[blockSize]float32, scale, sqn []float32, qn, worst float32) uint64 {
	var mask uint64
	for l := range scale {
		x := sqDist(qn, sqn[l], scale[l]*sums[l])
		d[l] = x
		if x < worst {
			mask |= 1 << l
		}
	}
	return mask
}

// addColumn adds w times a group's column of codes to the sums (arrays,
// so the loop runs without bounds checks).
func addColumn(sums *[blockSize]float32, w float32, col *[blockSize]int8) {
	for l := 0; l < blockSize; l += 4 {
		sums[l] += w * float32(col[l])
		sums[l+1] += w * float32(col[l+1])
		sums[l+2] += w * float32(col[l+2])
		sums[l+3] += w * float32(col[l+3])
	}
}

// addColumns is addColumn over a block's column of whole groups (len(col)
// a multiple of blockSize, len(sums) the same).
func addColumns(sums []float32, w float32, col []int8) {
	sums = sums[:len(col)]
	for g := 0; g+blockSize <= len(col); g += blockSize {
		addColumn((*[blockSize]float32)(sums[g:]), w, (*[blockSize]int8)(col[g:]))
	}
}

// WithLayout returns a copy of the store in blocks of lanes vectors (a
// multiple of blockSize) and superblocks of up to supers blocks: the same
// scans, another layout (benchmarks compare layouts side by side; lanes
// 1,024 and supers 1 is the layout before superblocks).
func (c *Codes) WithLayout(lanes, supers int) *Codes {
	return c.copyAs(lanes, supers, c.layout)
}

// AsLayout returns a copy of the store laid out as l: the same codes,
// scales and norms (benchmarks compare layouts side by side on one set);
// ByVector128 gives ByVector, as NewCodesLayout does.
func (c *Codes) AsLayout(l Layout) *Codes {
	return c.copyAs(c.lanes, superBlocks, l)
}

func (c *Codes) copyAs(lanes, supers int, l Layout) *Codes {
	if l == ByVector128 {
		l = ByVector // as NewCodesLayout: no store is laid out in tiles of 128
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	old := superBlocks
	superBlocks = supers
	defer func() { superBlocks = old }()
	out := &Codes{dim: c.dim, lanes: lanes, layout: l, scale: slices.Clone(c.scale), sqn: slices.Clone(c.sqn)}
	for id := range len(c.scale) {
		lane := id % lanes
		if lane == 0 {
			out.blocks = append(out.blocks, out.newBlock())
		}
		b, from, fl := out.blocks[len(out.blocks)-1], c.blocks[id/c.lanes], id%c.lanes
		for i := range c.dim {
			b.b[b.at(i, lane)] = from.b[from.at(i, fl)]
		}
	}
	return out
}
