package ann

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// denseCorpus returns n random dense vectors of dim values and nq dense
// queries (the use embedder's vectors are dense: every component
// non-zero).
func denseCorpus(n, nq, dim int) (docs, queries [][]float32) {
	r := rand.New(rand.NewPCG(3, 4))
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	for range n {
		docs = append(docs, vec())
	}
	for range nq {
		queries = append(queries, vec())
	}
	return docs, queries
}

// tilesKernel is a ByVector dot product kernel (dotTilesKernel), and
// tiles2Kernel its two-vector form (dotTiles2Kernel).
type (
	tilesKernel  = func(v []float32, b []int8, lane, lanes int, tiles []int32) float32
	tiles2Kernel = func(v []float32, b1 []int8, lane1 int, b2 []int8, lane2 int, lanes int, tiles []int32) (float32, float32)
)

// namedTiles is a ByVector kernel by name, with its two-vector form
// (nil: none).
type namedTiles struct {
	name string
	one  tilesKernel
	two  tiles2Kernel
}

// moreTilesKernels are ByVector kernels this build and CPU can run
// besides the one installed: codes_avx2_test.go adds the AVX2 ones on
// any CPU with AVX2, so that an AVX-512 CPU, which installs its own,
// tests them too.
var moreTilesKernels []namedTiles

// dotTilesKernels returns the portable ByVector kernel, the one this
// build and CPU use when different, and moreTilesKernels.
func dotTilesKernels() []namedTiles {
	out := []namedTiles{{"go", dotTilesPortable, nil}}
	if kernelName != "go" {
		out = append(out, namedTiles{kernelName, dotTilesKernel, dotTiles2Kernel})
	}
	for _, k := range moreTilesKernels {
		if k.name != kernelName {
			out = append(out, k)
		}
	}
	return out
}

// sameScan reports how got, a scan of a store laid out ByVector, differs
// from want, the same scan of the store laid out ByDimension: the
// distances are summed in another order, so each may differ by float32
// rounding (tol), and two results whose distances are that close may
// swap; anything else is a difference.
func sameScan(got, want []Result) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d results, want %d", len(got), len(want))
	}
	tol := func(d float32) float64 { return 1e-4 * max(1, float64(d)) }
	ids := map[int32]float32{}
	for _, r := range want {
		ids[r.ID] = r.Dist
	}
	last := want[len(want)-1].Dist
	for i, r := range got {
		if d := math.Abs(float64(r.Dist - want[i].Dist)); d > tol(want[i].Dist) {
			return fmt.Errorf("result %d: %v, want %v", i, r, want[i])
		}
		if d, ok := ids[r.ID]; ok {
			if math.Abs(float64(d-r.Dist)) > tol(d) {
				return fmt.Errorf("vector %d at distance %v, want %v", r.ID, r.Dist, d)
			}
		} else if math.Abs(float64(r.Dist-last)) > tol(last) {
			// Only a near tie with the last kept may come in instead.
			return fmt.Errorf("vector %d (distance %v) is not among the wanted, whose last is at %v", r.ID, r.Dist, last)
		}
	}
	return nil
}

// TestByVectorScansAgree: a store laid out ByVector (appended, or copied
// from one ByDimension) scans as the ByDimension store does, to float32
// rounding, with every kernel, for dense and sparse queries, unfiltered,
// through accept, through eligibility bitsets from half the vectors to
// one in 500, over explicit ids, split in parts, with a partial last
// block and cleared vectors; dense queries with runs of zeros (which a
// vector's dot product skips) among them.
func TestByVectorScansAgree(t *testing.T) {
	docs, queries := denseCorpus(2*codeLanes+333, 6, 300)
	_, hq := hashCorpus(t, 1, 4, 300, false)
	queries = append(queries, hq...) // sparse
	// Dense with zeros: a part of 120 (a short use query without its
	// lexical part), and two parts with a long gap.
	part := slices.Clone(queries[0])
	clear(part[120:])
	gap := slices.Clone(queries[1])
	clear(gap[50:200])
	queries = append(queries, part, gap)
	r := rand.New(rand.NewPCG(9, 9))
	eligs := map[string][]uint64{}
	for _, share := range []int{2, 30, 500} {
		e := make([]uint64, (len(docs)+63)/64)
		for i := range docs {
			if r.IntN(share) == 0 {
				e[i/64] |= 1 << (i % 64)
			}
		}
		eligs[fmt.Sprintf("1/%d", share)] = e
	}
	ids := []int32{}
	for i := range int32(len(docs)) {
		if r.IntN(7) == 0 {
			ids = append(ids, i)
		}
	}
	accept := func(id int32) bool { return id%3 != 1 }
	ref := NewCodes(300)
	rows := NewCodesLayout(300, ByVector)
	for _, v := range docs {
		ref.Append(v)
		rows.Append(v)
	}
	for id := int32(5); id < int32(len(docs)); id += 97 {
		ref.Clear(id)
		rows.Clear(id)
	}
	stores := map[string]*Codes{"appended": rows, "copied": ref.AsLayout(ByVector)}
	if rows.Layout() != ByVector || ref.Layout() != ByDimension || !rows.Equal(ref) || !stores["copied"].Equal(ref) {
		t.Fatal("the layouts hold other codes")
	}
	// Restored however the test ends: a failure must not leave the
	// tests after it with another kernel installed.
	defer func(one tilesKernel, two tiles2Kernel) { dotTilesKernel, dotTiles2Kernel = one, two }(dotTilesKernel, dotTiles2Kernel)
	for _, k := range dotTilesKernels() {
		kn := k.name
		dotTilesKernel, dotTiles2Kernel = k.one, k.two
		for qi, q := range queries {
			pq := NewQuery(q)
			merged := func(c *Codes, parts int) []Result {
				var all []Result
				for p := range parts {
					all = append(all, c.ScanPart(pq, 40, nil, nil, p, parts)...)
				}
				slices.SortFunc(all, func(a, b Result) int {
					if c := cmp.Compare(a.Dist, b.Dist); c != 0 {
						return c
					}
					return cmp.Compare(a.ID, b.ID)
				})
				return all[:40]
			}
			scans := map[string]func(c *Codes) []Result{
				"all":    func(c *Codes) []Result { return c.Scan(pq, 40, nil, nil) },
				"accept": func(c *Codes) []Result { return c.Scan(pq, 40, accept, nil) },
				"ids":    func(c *Codes) []Result { return c.Scan(pq, 40, nil, ids) },
				"parts":  func(c *Codes) []Result { return merged(c, 3) },
			}
			for name, el := range eligs {
				scans["eligible "+name] = func(c *Codes) []Result {
					return slices.Concat(c.ScanEligible(pq, 40, el, 0, 2), c.ScanEligible(pq, 40, el, 1, 2))
				}
			}
			for name, scan := range scans {
				want := scan(ref)
				if len(want) == 0 {
					t.Fatalf("query %d %s: no result", qi, name)
				}
				if name[0] == 'e' {
					sortResults(want)
				}
				for sn, c := range stores {
					got := scan(c)
					if name[0] == 'e' {
						sortResults(got)
					}
					if err := sameScan(got, want); err != nil {
						t.Fatalf("kernel %s, query %d (sparse %v), %s, %s store: %v", kn, qi, pq.Sparse(), name, sn, err)
					}
				}
			}
		}
	}
}

func sortResults(rs []Result) {
	slices.SortFunc(rs, func(a, b Result) int {
		if c := cmp.Compare(a.Dist, b.Dist); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// TestDotTilesKernelsAgree: every vector ByVector kernel this build and
// CPU can run (the installed one, and the AVX2 ones on any CPU with
// AVX2) gives the portable one's dot product to float32 rounding, at
// dimensions around the tiles' and the kernels' 8-, 16- and
// 32-component steps, over every tile and some, for first, middle and
// last lanes; and its two-vector form gives each vector's product bit
// for bit as alone.
func TestDotTilesKernelsAgree(t *testing.T) {
	ks := dotTilesKernels()
	if len(ks) < 2 {
		t.Skipf("this build or CPU has only the portable kernel")
	}
	r := rand.New(rand.NewPCG(5, 5))
	const lanes = 64
	for _, dim := range []int{1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 47, 63, 64, 65, 80, 127, 300, 639, 640, 641, 647, 648, 656, 1380, 2000} {
		v, b := make([]float32, dim), make([]int8, dim*lanes)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = int8(r.IntN(255) - 127)
		}
		var all, some []int32
		for t := range int32((dim + tileSize - 1) / tileSize) {
			all = append(all, t)
			if t%3 != 1 {
				some = append(some, t)
			}
		}
		for _, tiles := range [][]int32{all, some} {
			for _, lane := range []int{0, 17, lanes - 1} {
				blk := codeBlock{b: b, dim: dim, lanes: lanes, tile: tileSize}
				var want, abs float64
				for _, tl := range tiles {
					for d := int(tl) * tileSize; d < min(dim, int(tl+1)*tileSize); d++ {
						x := float64(v[d]) * float64(b[blk.at(d, lane)])
						want, abs = want+x, abs+math.Abs(x)
					}
				}
				for _, k := range ks {
					if got := k.one(v, b, lane, lanes, tiles); math.Abs(float64(got)-want) > 1e-5*abs {
						t.Fatalf("dimension %d lane %d tiles %v: %s gives %v, want %v", dim, lane, tiles, k.name, got, want)
					}
					// Two vectors at once: each exactly as alone,
					// whichever block and lane the other is.
					if k.two == nil {
						continue
					}
					other := slices.Clone(b)
					slices.Reverse(other)
					for _, lane2 := range []int{0, 17, lanes - 1} {
						d1, d2 := k.two(v, b, lane, other, lane2, lanes, tiles)
						w1, w2 := k.one(v, b, lane, lanes, tiles), k.one(v, other, lane2, lanes, tiles)
						if math.Float32bits(d1) != math.Float32bits(w1) || math.Float32bits(d2) != math.Float32bits(w2) {
							t.Fatalf("%s, dimension %d lanes %d and %d tiles %v: two at once give %v, %v; alone %v, %v", k.name, dim, lane, lane2, tiles, d1, d2, w1, w2)
						}
					}
				}
			}
		}
	}
}

// TestBlockRecordsConvertBetweenLayouts: a store loaded from the records
// of a store of the other layout (AppendBlockFrom), or from records in
// the tiles of 128 written before (ByVector128), holds the same codes as
// the one built, records of a store reload into one of its layout, and
// the layouts' records are their own bytes.
func TestBlockRecordsConvertBetweenLayouts(t *testing.T) {
	const dim = 1380 // the blend's: tiles of 640, 640 and 100; of 128, ten and a 100
	docs, _ := denseCorpus(2*codeLanes+100, 0, dim)
	built := map[Layout]*Codes{ByDimension: NewCodes(dim), ByVector: NewCodesLayout(dim, ByVector)}
	for _, c := range built {
		for _, v := range docs {
			c.Append(v)
		}
		c.Clear(3)
	}
	recs := map[Layout][][]byte{}
	for l, c := range built {
		for bi := range c.FullBlocks() {
			recs[l] = append(recs[l], c.AppendBlockRecord(nil, bi))
		}
	}
	for _, rec := range recs[ByVector] {
		recs[ByVector128] = append(recs[ByVector128], tiles128Record(rec, dim, codeLanes))
	}
	for _, l := range []Layout{ByVector128} { // read, never laid out so
		if a, b := NewCodesLayout(dim, l), built[ByDimension].AsLayout(l); a.Layout() != ByVector || b.Layout() != ByVector || !b.Equal(built[ByDimension]) {
			t.Fatalf("a store made or copied as %v is laid out %v and %v, want %v", l, a.Layout(), b.Layout(), ByVector)
		}
	}
	for _, pair := range [][2]Layout{{ByVector, ByDimension}, {ByVector, ByVector128}, {ByVector128, ByDimension}} {
		if slices.EqualFunc(recs[pair[0]], recs[pair[1]], func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Fatalf("the records of %v and %v are the same bytes", pair[0], pair[1])
		}
	}
	for _, tt := range []struct{ from, to Layout }{
		{ByDimension, ByDimension}, {ByDimension, ByVector}, {ByVector, ByVector}, {ByVector, ByDimension},
		{ByVector128, ByVector}, {ByVector128, ByDimension},
	} {
		t.Run(fmt.Sprintf("%v to %v", tt.from, tt.to), func(t *testing.T) {
			c := NewCodesLayout(dim, tt.to)
			for _, rec := range recs[tt.from] {
				if err := c.AppendBlockFrom(slices.Clone(rec), tt.from); err != nil {
					t.Fatal(err)
				}
			}
			for _, v := range docs[2*codeLanes:] {
				c.Append(v)
			}
			if !c.Equal(built[tt.to]) || c.Layout() != tt.to {
				t.Fatal("the store loaded differs from the one built")
			}
			if got := c.AppendBlockRecord(nil, 1); string(got) != string(recs[tt.to][1]) {
				t.Fatal("its records are not its layout's")
			}
		})
	}
}

// tiles128Record rewrites a ByVector block record in the tiles of 128
// components written before (ByVector128), with its own checksum: tile t
// holds components [128t, 128t+w) of the lanes, w bytes a lane.
func tiles128Record(rec []byte, dim, lanes int) []byte {
	out := slices.Clone(rec)
	for l := range lanes {
		for d := range dim {
			t, t0 := d/tileSize, d/128
			from := t*tileSize*lanes + l*min(tileSize, dim-t*tileSize) + d%tileSize
			to := t0*128*lanes + l*min(128, dim-t0*128) + d%128
			out[to] = rec[from]
		}
	}
	n := len(out) - 4
	return binary.LittleEndian.AppendUint32(out[:n], crc32.Checksum(out[:n], castagnoli))
}

// TestDenseQueryTiles: a dense query's tiles are those holding a
// non-zero component, the last one narrower.
func TestDenseQueryTiles(t *testing.T) {
	q := func(n int, nonZero ...int) []float32 {
		v := make([]float32, n)
		for _, i := range nonZero {
			v[i] = 1
		}
		return v
	}
	span := func(a, b int) []int {
		var out []int
		for i := a; i < b; i++ {
			out = append(out, i)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		v    []float32
		want []int32
	}{
		{name: "all non-zero", v: q(2*tileSize+10, span(0, 2*tileSize+10)...), want: []int32{0, 1, 2}},
		{name: "a zero tail (the use embedder's short query)", v: q(5*tileSize, span(0, 2*tileSize+1)...), want: []int32{0, 1, 2}},
		{name: "a zero tile between", v: q(5*tileSize-10, append(span(0, 60), span(2*tileSize, 5*tileSize-10)...)...), want: []int32{0, 2, 3, 4}},
		{name: "one component in the last tile", v: q(5*tileSize-10, append(span(0, 2*tileSize-5), 5*tileSize-11)...), want: []int32{0, 1, 4}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := NewQuery(tt.v)
			if p.sparse {
				t.Fatal("scored sparsely")
			}
			if !slices.Equal(p.tiles, tt.want) {
				t.Fatalf("tiles %v, want %v", p.tiles, tt.want)
			}
		})
	}
}
