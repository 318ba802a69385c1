package ann

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed"
)

// hashCorpus embeds n synthetic documents (Zipf-drawn words, like the
// search benchmark's) and nq queries with the hash embedder: the vectors
// the embedded engine indexes by default. Queries are three words (sparse
// vectors) or, with long, held-out documents (dense ones, the kind a graph
// serves).
func hashCorpus(tb testing.TB, n, nq, dim int, long bool) (docs, queries [][]float32) {
	tb.Helper()
	h, err := embed.NewHash(dim)
	if err != nil {
		tb.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 5000)
	for i := range vocab {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteByte("bcdfghjklmnprstvz"[r.IntN(17)])
			b.WriteByte("aeiou"[r.IntN(5)])
		}
		vocab[i] = fmt.Sprintf("%s%d", b.String(), i%7)
	}
	z := rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1))
	text := func(words int) string {
		ws := make([]string, words)
		for i := range ws {
			ws[i] = vocab[z.Uint64()]
		}
		return strings.Join(ws, " ")
	}
	for range n {
		docs = append(docs, h.Vector(text(60+r.IntN(60))))
	}
	for range nq {
		if long {
			queries = append(queries, h.Vector(text(60+r.IntN(60))))
			continue
		}
		ws := []string{vocab[50+r.IntN(1500)], vocab[50+r.IntN(1500)], vocab[50+r.IntN(1500)]}
		queries = append(queries, h.Vector(strings.Join(ws, " ")))
	}
	return docs, queries
}

// exactTop returns the k ids among the admitted nearest to q by exact
// float32 distance (ties by id).
func exactTop(docs [][]float32, q []float32, k int, admit func(int32) bool) []int32 {
	type pair struct {
		id int32
		d  float64
	}
	var ps []pair
	for i, v := range docs {
		if admit == nil || admit(int32(i)) {
			ps = append(ps, pair{int32(i), L2(q, v)})
		}
	}
	slices.SortFunc(ps, func(a, b pair) int {
		if a.d != b.d {
			if a.d < b.d {
				return -1
			}
			return 1
		}
		return int(a.id - b.id)
	})
	out := make([]int32, 0, k)
	for _, p := range ps[:min(k, len(ps))] {
		out = append(out, p.id)
	}
	return out
}

// rerank orders results by exact distance, as the engine does with its
// full-precision copy, and keeps k.
func rerank(docs [][]float32, q []float32, rs []Result, k int) []int32 {
	ids := make([]int32, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	slices.SortFunc(ids, func(a, b int32) int {
		da, db := L2(q, docs[a]), L2(q, docs[b])
		if da != db {
			if da < db {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	return ids[:min(k, len(ids))]
}

func recall(got, want []int32) float64 {
	if len(want) == 0 {
		return 1
	}
	hit := 0
	for _, w := range want {
		if slices.Contains(got, w) {
			hit++
		}
	}
	return float64(hit) / float64(len(want))
}

func build(docs [][]float32, dim int) *Graph {
	g := New(dim, func(id int32) []float32 { return docs[id] }, Config{Seed: 7})
	for _, v := range docs {
		g.Add(v)
	}
	return g
}

func TestSearchFindsTheExactNearestOnHashVectors(t *testing.T) {
	docs, queries := hashCorpus(t, 1500, 40, 256, true)
	g := build(docs, 256)
	tests := []struct {
		name   string
		admit  func(int32) bool
		floor  float64
		wantEf int
	}{
		{name: "no filter", floor: 0.97, wantEf: 100},
		{name: "a tenth admitted", admit: func(id int32) bool { return id%10 == 3 }, floor: 0.95, wantEf: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sum float64
			for _, q := range queries {
				pq := NewQuery(q)
				rs, _ := g.Search(pq, SearchOptions{Ef: tt.wantEf, Accept: tt.admit})
				for _, r := range rs {
					if tt.admit != nil && !tt.admit(r.ID) {
						t.Fatalf("result %d is not admitted by the filter", r.ID)
					}
				}
				sum += recall(rerank(docs, q, rs, 10), exactTop(docs, q, 10, tt.admit))
			}
			if got := sum / float64(len(queries)); got < tt.floor {
				t.Errorf("recall@10 = %.3f, want >= %.2f", got, tt.floor)
			}
		})
	}
}

func TestSearchReturnsExactTiesInIDOrder(t *testing.T) {
	// Forty copies of one vector and twenty of another: after re-ranking,
	// the ten nearest are the ten smallest ids of the nearer copies.
	a := make([]float32, 32)
	b := make([]float32, 32)
	a[0], b[1] = 1, 1
	var docs [][]float32
	for i := range 60 {
		if i%3 == 0 {
			docs = append(docs, b)
		} else {
			docs = append(docs, a)
		}
	}
	g := build(docs, 32)
	q := make([]float32, 32)
	q[0] = 0.9
	rs, _ := g.Search(NewQuery(q), SearchOptions{Ef: 50})
	got := rerank(docs, q, rs, 10)
	want := exactTop(docs, q, 10, nil)
	if !slices.Equal(got, want) {
		t.Errorf("top 10 = %v, want %v", got, want)
	}
}

func TestDeletedNodesAreNeverResults(t *testing.T) {
	docs, queries := hashCorpus(t, 1000, 20, 128, true)
	g := build(docs, 128)
	for id := int32(0); id < 1000; id += 2 {
		g.Delete(id)
	}
	if g.Deleted() != 500 {
		t.Fatalf("Deleted() = %d, want 500", g.Deleted())
	}
	odd := func(id int32) bool { return id%2 == 1 }
	var sum float64
	for _, q := range queries {
		rs, _ := g.Search(NewQuery(q), SearchOptions{Ef: 100})
		for _, r := range rs {
			if r.ID%2 == 0 {
				t.Fatalf("deleted node %d returned", r.ID)
			}
		}
		sum += recall(rerank(docs, q, rs, 10), exactTop(docs, q, 10, odd))
	}
	if got := sum / float64(len(queries)); got < 0.95 {
		t.Errorf("recall@10 with half the nodes deleted = %.3f, want >= 0.95", got)
	}
	g.Undelete(4)
	if g.IsDeleted(4) || g.Deleted() != 499 {
		t.Errorf("after Undelete(4): deleted %v, count %d", g.IsDeleted(4), g.Deleted())
	}
}

func TestGraphFileRoundTrip(t *testing.T) {
	for _, shard := range []int{0, 150} {
		t.Run(fmt.Sprintf("shard %d", shard), func(t *testing.T) { testGraphFileRoundTrip(t, shard) })
	}
}

// testGraphFileRoundTrip is TestGraphFileRoundTrip for a graph of shards
// of shard nodes (0: the default, one shard at this size).
func testGraphFileRoundTrip(t *testing.T, shard int) {
	docs, queries := hashCorpus(t, 500, 5, 64, true)
	g := New(64, func(id int32) []float32 { return docs[id] }, Config{Seed: 7, Shard: shard})
	for _, v := range docs {
		g.Add(v)
	}
	g.Delete(17)
	var buf bytes.Buffer
	if _, err := g.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	vec := func(id int32) []float32 { return docs[id] }
	g2, err := ReadGraph(bytes.NewReader(data), vec, Config{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if g2.Len() != 500 || !g2.IsDeleted(17) || g2.Deleted() != 1 {
		t.Fatalf("read back %d nodes, 17 deleted %v, %d deleted", g2.Len(), g2.IsDeleted(17), g2.Deleted())
	}
	if g2.Config() != g.Config() || g2.Shards() != g.Shards() || !slices.Equal(g2.entries, g.entries) || !slices.Equal(g2.tops, g.tops) {
		t.Fatalf("read back %+v in %d shards (entries %v), want %+v in %d (%v)", g2.Config(), g2.Shards(), g2.entries, g.Config(), g.Shards(), g.entries)
	}
	for _, q := range queries {
		a, _ := g.Search(NewQuery(q), SearchOptions{Ef: 20})
		b, _ := g2.Search(NewQuery(q), SearchOptions{Ef: 20})
		if !slices.Equal(a, b) {
			t.Fatalf("search after reading back differs:\n%v\n%v", a, b)
		}
	}
	// Adding to a graph read back works like adding to the original.
	g2.Add(docs[3])
	if g2.Len() != 501 {
		t.Errorf("Len after Add = %d", g2.Len())
	}
	for _, cut := range []int{0, 10, len(data) / 2, len(data) - 1} {
		if _, err := ReadGraph(bytes.NewReader(data[:cut]), vec, Config{}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("a file cut at %d bytes: err = %v, want ErrCorrupt", cut, err)
		}
	}
	flipped := bytes.Clone(data)
	flipped[len(flipped)/3] ^= 0x40
	if _, err := ReadGraph(bytes.NewReader(flipped), vec, Config{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a flipped bit: err = %v, want ErrCorrupt", err)
	}
}

// TestGraphKeepsItsBuildSettings: a graph read back keeps the M,
// efConstruction and shard size of its file (an index built with older defaults opens
// with them and goes on adding nodes with their link lists), whatever the
// Config it is read with or the defaults are; a zero Config takes the
// defaults.
func TestGraphKeepsItsBuildSettings(t *testing.T) {
	docs, queries := hashCorpus(t, 400, 5, 64, true)
	vec := func(id int32) []float32 { return docs[id] }
	if got := New(64, vec, Config{}).Config(); got != (Config{M: DefaultM, EfConstruction: DefaultEfConstruction, Shard: DefaultShard}) {
		t.Fatalf("zero Config: %+v, want the defaults", got)
	}
	for _, tc := range []struct {
		name  string
		built Config
		read  Config
	}{
		{name: "the first defaults, read with zero", built: Config{M: 16, EfConstruction: 100, Shard: Unsharded}, read: Config{Seed: 7}},
		{name: "wider, read with other settings", built: Config{M: 32, EfConstruction: 200, Shard: Unsharded}, read: Config{M: 12, EfConstruction: 50, Shard: 50, Seed: 7}},
		{name: "shards, read with none", built: Config{M: 16, EfConstruction: 100, Shard: 120}, read: Config{Shard: Unsharded, Seed: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(64, vec, Config{M: tc.built.M, EfConstruction: tc.built.EfConstruction, Shard: tc.built.Shard, Seed: 1})
			for _, v := range docs[:300] {
				g.Add(v)
			}
			var buf bytes.Buffer
			if _, err := g.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			g2, err := ReadGraph(bytes.NewReader(buf.Bytes()), vec, tc.read)
			if err != nil {
				t.Fatal(err)
			}
			if got := g2.Config(); got != tc.built {
				t.Fatalf("read back with %+v: %+v, want %+v", tc.read, got, tc.built)
			}
			for _, v := range docs[300:] {
				g2.Add(v)
			}
			if got := len(g2.links(399, 0)); got != 2*tc.built.M {
				t.Errorf("a node added after reading back has %d layer-0 places, want %d", got, 2*tc.built.M)
			}
			for _, q := range queries {
				want := exactTop(docs, q, 10, nil)
				rs, _ := g2.Search(NewQuery(q), SearchOptions{Ef: 40})
				if r := recall(rerank(docs, q, rs, 10), want); r < 0.9 {
					t.Errorf("recall@10 after adding to the graph read back = %.2f", r)
				}
			}
		})
	}
}

func TestQuantisedDistanceIsClose(t *testing.T) {
	docs, queries := hashCorpus(t, 200, 10, 768, false)
	c := NewCodes(768)
	for _, v := range docs {
		c.Append(v)
	}
	for _, q := range queries {
		for _, r := range c.Scan(NewQuery(q), 200, nil, nil) {
			if d := float64(r.Dist) - L2(q, docs[r.ID]); d > 0.02 || d < -0.02 {
				t.Fatalf("vector %d: quantised distance %.4f, exact %.4f", r.ID, r.Dist, L2(q, docs[r.ID]))
			}
		}
	}
}

func TestCodesScanFindsTheExactNearestForShortQueries(t *testing.T) {
	docs, queries := hashCorpus(t, 2000, 30, 768, false)
	c := NewCodes(768)
	for _, v := range docs {
		c.Append(v)
	}
	tenth := func(id int32) bool { return id%10 == 3 }
	for _, tt := range []struct {
		name  string
		admit func(int32) bool
		parts int
	}{
		{name: "no filter", parts: 1},
		{name: "no filter, in two parts", parts: 2},
		{name: "a tenth admitted", admit: tenth, parts: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, q := range queries {
				pq := NewQuery(q)
				if !pq.Sparse() {
					t.Fatal("a three-word query is not sparse")
				}
				var rs []Result
				for p := range tt.parts {
					rs = append(rs, c.ScanPart(pq, 42, tt.admit, nil, p, tt.parts)...)
				}
				// 42 candidates re-ranked exactly hold the exact 10.
				if got, want := rerank(docs, q, rs, 10), exactTop(docs, q, 10, tt.admit); !slices.Equal(got, want) {
					t.Fatalf("top 10 = %v, want %v", got, want)
				}
			}
		})
	}
}

// TestBlockKernelsAgree: every vector block kernel this build and CPU
// can run (GOEXPERIMENT=simd: the AVX-512 ones on a CPU with AVX-512,
// the AVX2 ones on any CPU with AVX2) returns the portable kernel's
// distances (to float32 rounding: it fuses multiplies and adds) and the
// same candidates, for sparse and dense queries and a worst distance that
// cuts the block.
func TestBlockKernelsAgree(t *testing.T) {
	ks := kernelSets()
	if len(ks) < 2 {
		t.Skipf("this build or CPU has only the %q kernels", kernelName)
	}
	docs, queries := hashCorpus(t, 640, 10, 768, false)
	c := NewCodes(768)
	for _, v := range docs {
		c.Append(v)
	}
	dense := make([]float32, 768)
	for i := range dense {
		dense[i] = float32(i%7) - 3
	}
	queries = append(queries, dense)
	for _, k := range ks[1:] {
		testBlockKernel(t, c, docs, queries, k)
	}
}

// testBlockKernel is TestBlockKernelsAgree for kernel set k.
func testBlockKernel(t *testing.T, c *Codes, docs, queries [][]float32, k kernelSet) {
	L := c.lanes
	for qi, q := range queries {
		pq := NewQuery(q)
		idx, val := pq.nzIdx()
		for vi := 0; vi+blockSize <= len(docs); vi += blockSize {
			bi := vi / blockSize
			blk := c.blocks[vi/L]
			b, stride := blk.b[vi%L:], blk.stride
			sc, sq := c.scale[vi:vi+blockSize], c.sqn[vi:vi+blockSize]
			var want, got [blockSize]float32
			blockDistances(&want, b, stride, idx, val, sc, sq, pq.norm, float32(math.Inf(1)))
			worst := want[bi%blockSize] // some lanes nearer, some not
			wantMask := blockDistances(&want, b, stride, idx, val, sc, sq, pq.norm, worst)
			gotMask := k.block(&got, b, stride, idx, val, sc, sq, pq.norm, worst)
			for l := range got {
				if diff := math.Abs(float64(got[l] - want[l])); diff > 1e-4*max(1, float64(want[l])) {
					t.Fatalf("query %d group %d lane %d: %s distance %v, go %v", qi, bi, l, k.name, got[l], want[l])
				}
				if w, g := wantMask>>l&1, gotMask>>l&1; w != g && math.Abs(float64(want[l]-worst)) > 1e-4 {
					t.Fatalf("query %d group %d lane %d: %s says nearer than worst %v, go %v (distance %v, worst %v)", qi, bi, l, k.name, g, w, want[l], worst)
				}
			}
		}
		var rs [2][]Result
		for i, ki := range []kernelSet{portableKernels, k} {
			restore := useKernels(ki)
			rs[i] = c.Scan(pq, 50, nil, nil)
			restore()
		}
		if got, want := rerank(docs, q, rs[1], 10), rerank(docs, q, rs[0], 10); !slices.Equal(got, want) {
			t.Fatalf("query %d: top 10 with %s = %v, with go %v", qi, k.name, got, want)
		}
	}
}

// TestCodeWidthsAgree: blocks of 64 vectors (each group's distances by
// the block kernel) and of other widths (wide blocks' column sums, and
// the block kernel where few groups are eligible) give the same scan,
// distances bit for bit, with every kernel set, for sparse and dense
// queries, unfiltered, through accept, through eligibility bitsets dense
// and sparse, over explicit ids, split in parts, with a partial last
// group and cleared vectors.
func TestCodeWidthsAgree(t *testing.T) {
	docs, queries := hashCorpus(t, 3000+37, 8, 768, false)
	dense := make([]float32, 768)
	for i := range dense {
		dense[i] = float32(i%7) - 3
	}
	queries = append(queries, dense)
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
	// Whole groups eligible, one group in 20: blocks where the kernel
	// runs per group next to wide ones.
	e := make([]uint64, (len(docs)+63)/64)
	for w := range e {
		if r.IntN(20) == 0 {
			e[w] = ^uint64(0)
		}
	}
	eligs["groups 1/20"] = e
	ids := []int32{}
	for i := range int32(len(docs)) {
		if r.IntN(7) == 0 {
			ids = append(ids, i)
		}
	}
	accept := func(id int32) bool { return id%3 != 1 }
	// The reference: blocks of 64, each its own allocation; then wider
	// blocks and superblocks of several blocks (the columns of a
	// superblock's blocks adjacent), as appended, and copied to the layout
	// from a store of another one.
	type layout struct{ lanes, supers int }
	ref := layout{64, 1}
	layouts := []layout{ref, {256, 1}, {1024, 1}, {64, 8}, {256, 2}, {1024, 64}}
	stores := map[layout]*Codes{}
	for _, l := range layouts {
		stores[l] = codesOfLayout(l.lanes, l.supers, docs)
		for id := int32(5); id < int32(len(docs)); id += 97 {
			stores[l].Clear(id)
		}
	}
	copied := layout{1024, 3}
	stores[copied] = stores[layout{256, 2}].WithLayout(copied.lanes, copied.supers)
	layouts = append(layouts, copied)
	for _, k := range kernelSets() {
		restore := useKernels(k)
		for qi, q := range queries {
			pq := NewQuery(q)
			scans := map[string]func(c *Codes) []Result{
				"all":    func(c *Codes) []Result { return c.Scan(pq, 40, nil, nil) },
				"accept": func(c *Codes) []Result { return c.Scan(pq, 40, accept, nil) },
				"ids":    func(c *Codes) []Result { return c.Scan(pq, 40, nil, ids) },
				"parts": func(c *Codes) []Result {
					// Parts split the blocks: their merged top 40.
					all := slices.Concat(c.ScanPart(pq, 40, nil, nil, 0, 3), c.ScanPart(pq, 40, nil, nil, 1, 3), c.ScanPart(pq, 40, nil, nil, 2, 3))
					slices.SortFunc(all, func(a, b Result) int {
						if c := cmp.Compare(a.Dist, b.Dist); c != 0 {
							return c
						}
						return cmp.Compare(a.ID, b.ID)
					})
					return all[:40]
				},
			}
			for name, el := range eligs {
				scans["eligible "+name] = func(c *Codes) []Result { return c.ScanEligible(pq, 40, el, 0, 1) }
			}
			for name, scan := range scans {
				want := scan(stores[ref])
				if len(want) == 0 {
					t.Fatalf("%s query %d %s: no result", k.name, qi, name)
				}
				for _, l := range layouts[1:] {
					if got := scan(stores[l]); !slices.Equal(got, want) {
						t.Fatalf("%s query %d %s: blocks of %d in superblocks of %d give\n%v\nblocks of 64\n%v", k.name, qi, name, l.lanes, l.supers, got, want)
					}
				}
			}
		}
		restore()
	}
}

// TestAppendFromIsAppend: loading codes by AppendFrom (blocks quantised in
// parallel) gives what appending one vector at a time gives, whatever the
// number of workers and whether the store already held vectors.
func TestAppendFromIsAppend(t *testing.T) {
	// More than two blocks: AppendFrom quantises whole blocks in parallel.
	docs, _ := hashCorpus(t, 2*codeLanes+500, 0, 768, false)
	vec := func(i int32) []float32 { return docs[i] }
	want := NewCodes(768)
	for _, v := range docs {
		want.Append(v)
	}
	for _, tt := range []struct {
		name    string
		held    int // vectors appended one at a time first
		workers int
	}{
		{name: "two workers", workers: 2},
		{name: "three workers", workers: 3},
		{name: "one worker", workers: 1},
		{name: "after a block held", held: codeLanes, workers: 2},
		{name: "after 10 held (unaligned)", held: 10, workers: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := NewCodes(768)
			for _, v := range docs[:tt.held] {
				got.Append(v)
			}
			got.AppendFrom(len(docs)-tt.held, func(i int32) []float32 { return vec(i + int32(tt.held)) }, tt.workers)
			if !slices.Equal(got.scale, want.scale) || !slices.Equal(got.sqn, want.sqn) || len(got.blocks) != len(want.blocks) {
				t.Fatalf("scales, norms or blocks differ (%d blocks, want %d)", len(got.blocks), len(want.blocks))
			}
			for i := range int32(len(docs)) {
				if !slices.Equal(got.codeOf(i), want.codeOf(i)) {
					t.Fatalf("vector %d's codes differ", i)
				}
			}
			if got.Bytes() != want.Bytes() {
				t.Fatalf("%d bytes, appended one at a time %d", got.Bytes(), want.Bytes())
			}
		})
	}
}

// TestOutliersAddedLastAreLinkedTo: nodes far from everything, added
// after a dense crowd (one-sentence documents after thousands of
// abstracts), each get a link pointing to them on layer 0 and are found
// by a walk from a query at their own vector: a neighbour whose list is
// full shrinks it by the heuristic, which keeps a node in a new
// direction, where keeping the closest links dropped the outlier from
// every list (issue 20/23).
func TestOutliersAddedLastAreLinkedTo(t *testing.T) {
	const dim = 64
	r := rand.New(rand.NewPCG(5, 6))
	centre := make([]float32, dim)
	for i := range centre {
		centre[i] = float32(r.NormFloat64())
	}
	var docs [][]float32
	for range 3000 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = centre[i] + 0.3*float32(r.NormFloat64())
		}
		docs = append(docs, v)
	}
	crowd := len(docs)
	for range 50 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = 4 * float32(r.NormFloat64())
		}
		docs = append(docs, v)
	}
	g := build(docs, dim)
	linked := make([]bool, len(docs))
	for id := range int32(len(docs)) {
		for _, nb := range g.links(id, 0) {
			if nb < 0 {
				break
			}
			linked[nb] = true
		}
	}
	unlinked, missed := 0, 0
	for id := crowd; id < len(docs); id++ {
		if !linked[id] {
			unlinked++
		}
		rs, _ := g.Search(NewQuery(docs[id]), SearchOptions{Ef: 10})
		if len(rs) == 0 || rs[0].ID != int32(id) {
			missed++
		}
	}
	if unlinked > 0 || missed > 0 {
		t.Errorf("of %d outliers added last, %d have no link pointing to them and %d are not found first from their own vector", len(docs)-crowd, unlinked, missed)
	}
}

// TestGroupedSearchReturnsEachGroupOnceByItsNearestNode: with Group, a
// search returns Ef distinct groups (documents of several passages),
// each by its nearest node, nearest first, and they are the exact
// nearest groups on a small graph walked wide.
func TestGroupedSearchReturnsEachGroupOnceByItsNearestNode(t *testing.T) {
	docs, queries := hashCorpus(t, 1200, 20, 128, true)
	g := build(docs, 128)
	group := func(id int32) int32 { return id / 4 } // four consecutive nodes a group
	found, total := 0, 0
	for _, q := range queries {
		pq := NewQuery(q)
		rs, _ := g.Search(pq, SearchOptions{Ef: 60, Group: group})
		if len(rs) != 60 {
			t.Fatalf("%d results, want 60", len(rs))
		}
		seen := map[int32]bool{}
		for i, r := range rs {
			grp := group(r.ID)
			if seen[grp] {
				t.Fatalf("group %d returned twice", grp)
			}
			seen[grp] = true
			if i > 0 && r.Dist < rs[i-1].Dist {
				t.Fatalf("results out of order at %d", i)
			}
		}
		// The exact nearest 10 groups are among the 60, by their
		// nearest node.
		best := map[int32]float32{}
		for id := range int32(len(docs)) {
			d := g.QueryDist(pq, id)
			if b, ok := best[group(id)]; !ok || d < b {
				best[group(id)] = d
			}
		}
		grps := make([]int32, 0, len(best))
		for grp := range best {
			grps = append(grps, grp)
		}
		slices.SortFunc(grps, func(a, b int32) int {
			switch {
			case best[a] < best[b]:
				return -1
			case best[a] > best[b]:
				return 1
			}
			return int(a - b)
		})
		for _, grp := range grps[:10] {
			total++
			for _, r := range rs {
				if group(r.ID) == grp && r.Dist == best[grp] {
					found++
				}
			}
		}
	}
	if r := float64(found) / float64(total); r < 0.97 {
		t.Errorf("recall@10 of groups (by their nearest node) = %.3f, want >= 0.97", r)
	}
}

// TestDotKernelsAgree: the dense dot kernel (GOEXPERIMENT=simd on a CPU
// with AVX-512 or AVX2) returns the portable kernel's products, to float32
// rounding, for every length (the tail and the short-vector path too).
func TestDotKernelsAgree(t *testing.T) {
	if kernelName == "go" && dotName == "go" {
		t.Skip("this build or CPU has only the portable dot kernel")
	}
	wantDotAgrees(t, "dot", dotKernel, 4)
}

// wantDotAgrees fails unless dot returns dotPortable's products, to
// float32 rounding, for random vectors of every length up to 1,300 (in
// steps that grow with it), drawn with seed.
func wantDotAgrees(t *testing.T, name string, dot func(a, b []float32) float32, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, seed))
	for n := 0; n <= 1300; n += 1 + n/16 {
		a, b := make([]float32, n), make([]float32, n)
		var mag float64
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			mag += math.Abs(float64(a[i] * b[i]))
		}
		want, got := dotPortable(a, b), dot(a, b)
		if diff := math.Abs(float64(got - want)); diff > 1e-5*max(1, mag) {
			t.Fatalf("n=%d: %s %v, portable %v", n, name, got, want)
		}
	}
}

// TestShardsKeepTheirLinksAndMergeTheirResults: a graph of shards links
// each node only to nodes of its own shard, each shard has its own entry
// point, and Search walks every shard and merges: the exact nearest are
// found as in one graph (the shards' nodes are found wherever they lie),
// a grouped search returns each group once even when its nodes straddle
// two shards, and a bounded walk reports reaching its bound. A graph of
// one shard (Unsharded) is written as before shards (DRANN1), one of
// several as DRANN2.
func TestShardsKeepTheirLinksAndMergeTheirResults(t *testing.T) {
	docs, queries := hashCorpus(t, 1500, 40, 256, true)
	vec := func(id int32) []float32 { return docs[id] }
	g := New(256, vec, Config{Seed: 7, Shard: 500})
	for _, v := range docs {
		g.Add(v)
	}
	if g.Shards() != 3 || g.Config().Shard != 500 {
		t.Fatalf("%d shards of %d, want 3 of 500", g.Shards(), g.Config().Shard)
	}
	for id := range int32(len(docs)) {
		for l := 0; l <= int(g.level[id]); l++ {
			for _, x := range g.links(id, l) {
				if x >= 0 && x/500 != id/500 {
					t.Fatalf("node %d (shard %d) is linked to node %d (shard %d) on layer %d", id, id/500, x, x/500, l)
				}
			}
		}
	}
	for s, e := range g.entries {
		if int(e)/500 != s {
			t.Fatalf("shard %d's entry point is node %d", s, e)
		}
	}
	var sum float64
	fromShard := make([]int, 3)
	for _, q := range queries {
		rs, _ := g.Search(NewQuery(q), SearchOptions{Ef: 100})
		got := rerank(docs, q, rs, 10)
		for _, id := range got {
			fromShard[id/500]++
		}
		sum += recall(got, exactTop(docs, q, 10, nil))
	}
	if got := sum / float64(len(queries)); got < 0.97 {
		t.Errorf("recall@10 = %.3f, want >= 0.97", got)
	}
	for s, n := range fromShard {
		if n == 0 {
			t.Errorf("no result from shard %d: %v", s, fromShard)
		}
	}
	// Groups of 7 nodes: group 71 is nodes 497-503, across shards 0 and 1.
	group := func(id int32) int32 { return id / 7 }
	for _, q := range queries {
		rs, _ := g.Search(NewQuery(q), SearchOptions{Ef: 50, Group: group})
		seen := map[int32]bool{}
		for i, r := range rs {
			if seen[group(r.ID)] {
				t.Fatalf("group %d returned twice: %v", group(r.ID), rs)
			}
			seen[group(r.ID)] = true
			if i > 0 && r.Dist < rs[i-1].Dist {
				t.Fatalf("results out of order: %v", rs)
			}
		}
		if len(rs) != 50 {
			t.Fatalf("%d groups, want 50", len(rs))
		}
	}
	if _, visits := g.Search(NewQuery(queries[0]), SearchOptions{Ef: 100, MaxVisits: 60}); visits < 60 {
		t.Errorf("a walk bounded at 60 visits reports %d", visits)
	}
	one := New(256, vec, Config{Seed: 7, Shard: Unsharded})
	for _, v := range docs[:600] {
		one.Add(v)
	}
	if one.Shards() != 1 || one.Config().Shard != Unsharded {
		t.Errorf("unsharded: %d shards, config %+v", one.Shards(), one.Config())
	}
	if b := graphBytes(t, one); !bytes.HasPrefix(b, magic) {
		t.Errorf("an unsharded graph is written as %q, want %q", b[:8], magic)
	}
	if b := graphBytes(t, g); !bytes.HasPrefix(b, magicSharded) {
		t.Errorf("a sharded graph is written as %q, want %q", b[:8], magicSharded)
	}
}
