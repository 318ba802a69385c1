package ann

import (
	"container/heap"
	"math"
	"math/bits"
	"sync"
)

// blockSize is the number of vectors of a code block.
const blockSize = 64

// Codes holds int8-quantised vectors of one dimension for exact scans,
// laid out by dimension within blocks of 64 vectors: component i of the
// block's vectors are 64 adjacent bytes. A sparse query (a short text's
// hash vector: a few dozen non-zero components) then reads a few dozen
// cache lines per 64 vectors instead of every vector whole, and a dense
// one streams through the blocks. Vectors are numbered from 0 in the
// order they are appended; deletions are the caller's (Scan's accept).
//
// Concurrency: Scans run concurrently with each other and with one
// Append at a time.
type Codes struct {
	dim int

	mu     sync.RWMutex
	blocks [][]int8  // dim·blockSize each
	scale  []float32 // v ≈ scale·code
	sqn    []float32 // squared norm of the dequantised vector
}

// NewCodes returns an empty store for vectors of dim values.
func NewCodes(dim int) *Codes { return &Codes{dim: dim} }

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
	return int64(len(c.blocks))*int64(c.dim*blockSize) + 8*int64(len(c.scale))
}

// Append quantises v (of the store's dimension) and returns its number.
func (c *Codes) Append(v []float32) int32 {
	code, scale, sqn := quantize(make([]int8, 0, c.dim), v)
	c.mu.Lock()
	defer c.mu.Unlock()
	id := len(c.scale)
	lane := id % blockSize
	if lane == 0 {
		c.blocks = append(c.blocks, make([]int8, c.dim*blockSize))
	}
	b := c.blocks[len(c.blocks)-1]
	for i, x := range code {
		b[i*blockSize+lane] = x
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
	if base%blockSize != 0 || workers < 2 || n < 2*blockSize {
		c.mu.Unlock()
		for i := range int32(n) {
			c.Append(vec(i))
		}
		return
	}
	defer c.mu.Unlock()
	nb := (n + blockSize - 1) / blockSize
	first := len(c.blocks)
	for range nb {
		c.blocks = append(c.blocks, make([]int8, c.dim*blockSize))
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
				for lane := range min(blockSize, n-bi*blockSize) {
					i := bi*blockSize + lane
					var scale, sqn float32
					code, scale, sqn = quantize(code[:0], vec(int32(i)))
					for d, x := range code {
						b[d*blockSize+lane] = x
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
	b, lane := c.blocks[int(id)/blockSize], int(id)%blockSize
	for i := range c.dim {
		b[i*blockSize+lane] = 0
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
		offerD(id, max(0, q.norm+c.sqn[id]-2*c.scale[id]*dot))
	}
	n := len(c.scale)
	if ids != nil {
		ids = ids[len(ids)*part/parts : len(ids)*(part+1)/parts]
		code := make([]int8, c.dim)
		for _, id := range ids {
			if int(id) >= n {
				break
			}
			b, lane := c.blocks[int(id)/blockSize], int(id)%blockSize
			if q.sparse {
				var s float32
				for j, i := range q.idx {
					s += q.val[j] * float32(b[int(i)*blockSize+lane])
				}
				offer(id, s)
				continue
			}
			for i := range code {
				code[i] = b[i*blockSize+lane]
			}
			offer(id, q.dot(code))
		}
	} else {
		idx, val := q.idx, q.val
		if !q.sparse {
			idx, val = q.nzIdx()
		}
		lo, hi := len(c.blocks)*part/parts, len(c.blocks)*(part+1)/parts
		for bi := lo; bi < hi; bi++ {
			var lanesOK uint64 = math.MaxUint64
			if elig != nil {
				if bi >= len(elig) || elig[bi] == 0 {
					continue
				}
				lanesOK = elig[bi]
			}
			b := c.blocks[bi]
			base := bi * blockSize
			lanes := min(blockSize, n-base)
			worst := float32(math.Inf(1))
			if len(res) == k {
				worst = res[0].d
			}
			// The block's distances go to sums; mask marks the lanes
			// nearer than the heap's worst (all while it is not full):
			// only those are offered.
			var mask uint64
			if lanes == blockSize {
				mask = blockKernel(&sums, b, idx, val, c.scale[base:base+blockSize], c.sqn[base:base+blockSize], q.norm, worst)
			} else {
				mask = blockDistances(&sums, b, idx, val, c.scale[base:base+lanes], c.sqn[base:base+lanes], q.norm, worst)
			}
			mask &= lanesOK
			for ; mask != 0; mask &= mask - 1 {
				l := bits.TrailingZeros64(mask)
				offerD(int32(base+l), sums[l])
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

// blockKernel computes a whole block's distances (blockDistances' contract);
// a vector kernel replaces it where the CPU has one (codes_simd.go).
var blockKernel = blockDistances

// kernelName names blockKernel (benchmarks).
var kernelName = "go"

// blockDistances stores in d the quantised squared distances of a block's
// lanes (len(scale) of them) to the query whose non-zero components are
// idx and val and whose squared norm is qn: max(0, qn + sqn − 2·scale·
// (q·code)). It returns a mask of the lanes whose distance is below worst.
// The block's columns are read only at the query's non-zero components.
func blockDistances(d *[blockSize]float32, b []int8, idx []int32, val []float32, scale, sqn []float32, qn, worst float32) uint64 {
	*d = [blockSize]float32{}
	for j, i := range idx {
		addColumn(d, val[j], (*[blockSize]int8)(b[int(i)*blockSize:]))
	}
	var mask uint64
	for l := range scale {
		x := max(0, qn+sqn[l]-2*scale[l]*d[l])
		d[l] = x
		if x < worst {
			mask |= 1 << l
		}
	}
	return mask
}

// addColumn adds w times a block's column of codes to the sums (arrays,
// so the loop runs without bounds checks).
func addColumn(sums *[blockSize]float32, w float32, col *[blockSize]int8) {
	for l := 0; l < blockSize; l += 4 {
		sums[l] += w * float32(col[l])
		sums[l+1] += w * float32(col[l+1])
		sums[l+2] += w * float32(col[l+2])
		sums[l+3] += w * float32(col[l+3])
	}
}
