package bleveengine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/ann"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// annCorpus is a small corpus with hash vectors: documents of 60-120
// Zipf-drawn words (one content passage each, a metadata vector from a
// short description), short queries (sparse vectors) and long ones (dense,
// document-like).
type annCorpus struct {
	docs         []engine.Document
	short, long  [][]float32
	contentByID  map[int64][]float32
	metadataByID map[int64][]float32
}

func newANNCorpus(t testing.TB, n int) *annCorpus {
	t.Helper()
	h, err := embed.NewHash(256)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	vocab := testVocab(3000)
	text := zipfText(r, vocab)
	c := &annCorpus{contentByID: map[int64][]float32{}, metadataByID: map[int64][]float32{}}
	for i := range n {
		id := int64(i + 1)
		cv, mv := h.Vector(text(60+r.IntN(60))), h.Vector(text(4))
		c.contentByID[id], c.metadataByID[id] = cv, mv
		c.docs = append(c.docs, engine.Document{
			ID: id, Rev: 1, GroupIDs: []int64{id % 10}, Content: "text",
			ContentVectors: [][]float32{cv}, MetadataVector: mv,
		})
	}
	for range 30 {
		c.short = append(c.short, h.Vector(vocab[50+r.IntN(800)]+" "+vocab[50+r.IntN(800)]+" "+vocab[50+r.IntN(800)]))
		c.long = append(c.long, h.Vector(text(80)))
	}
	return c
}

// exact returns the ids of the k documents nearest to q among the
// admitted, by exact distance (ties by id).
func (c *annCorpus) exact(q []float32, k int, metadata bool, admit func(id int64) bool) []int64 {
	vs := c.contentByID
	if metadata {
		vs = c.metadataByID
	}
	type pair struct {
		id int64
		d  float64
	}
	var ps []pair
	for id, v := range vs {
		if admit(id) {
			// The engine ranks by float32 distances.
			ps = append(ps, pair{id, float64(float32(ann.L2(q, v)))})
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
	var out []int64
	for _, p := range ps[:min(k, len(ps))] {
		out = append(out, p.id)
	}
	return out
}

// graphEngine returns an in-memory engine that gives every vector set a
// graph (GraphAlways), holding docs; it is closed when the test ends.
func graphEngine(t testing.TB, docs []engine.Document) *Engine {
	t.Helper()
	e, err := Open("", Options{InMemory: true, VectorGraph: GraphAlways})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.Upsert(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	return e
}

// vectorSearch runs a vector clause through Search and returns the ids.
func vectorSearch(t testing.TB, e *Engine, q []float32, k int, target string, groups []int64) []int64 {
	t.Helper()
	req := engine.Request{
		Query:       queryOf(t, fmt.Sprintf(`{"where": {"vector": {"target": %q, "query": "q"}}, "options": {"vector_k": %d}, "limit": %d}`, target, k, k)),
		QueryVector: q,
	}
	if groups == nil {
		req.Unrestricted = true
	} else {
		req.GroupIDs = groups
	}
	res, err := e.Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, h := range res.Hits {
		ids = append(ids, h.ID)
	}
	return ids
}

// recallOf is the share of want found in got (1 for an empty want).
func recallOf[T comparable](got, want []T) float64 {
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

// TestApproximateSearchAgreesWithExact compares the engine's vector
// search (graph walk for dense queries, code scan for sparse ones, with
// the visibility filter admitting everything, a tenth or a hundredth of
// the documents) with an exact scan of the same vectors.
func TestApproximateSearchAgreesWithExact(t *testing.T) {
	c := newANNCorpus(t, 2000)
	e := graphEngine(t, c.docs)
	// Each document is in group id%10.
	tests := []struct {
		name   string
		groups []int64
		admit  func(id int64) bool
		floor  float64
	}{
		{name: "everything", admit: func(int64) bool { return true }, floor: 0.95},
		{name: "a tenth", groups: []int64{3}, admit: func(id int64) bool { return id%10 == 3 }, floor: 0.95},
	}
	for _, tt := range tests {
		for _, kind := range []struct {
			name    string
			queries [][]float32
			floor   float64
		}{{"short (sparse, scanned)", c.short, 1}, {"long (dense, graph)", c.long, tt.floor}} {
			t.Run(tt.name+", "+kind.name, func(t *testing.T) {
				var sum float64
				for _, q := range kind.queries {
					got := vectorSearch(t, e, q, 10, "content", tt.groups)
					want := c.exact(q, 10, false, tt.admit)
					for _, id := range got {
						if !tt.admit(id) {
							t.Fatalf("document %d is not visible to the caller", id)
						}
					}
					sum += recallOf(got, want)
				}
				if r := sum / float64(len(kind.queries)); r < kind.floor {
					t.Errorf("recall@10 = %.3f, want >= %.2f", r, kind.floor)
				}
			})
		}
	}
	t.Run("metadata target", func(t *testing.T) {
		for _, q := range c.short[:10] {
			got := vectorSearch(t, e, q, 10, "metadata", nil)
			if want := c.exact(q, 10, true, func(int64) bool { return true }); !slices.Equal(got, want) {
				t.Fatalf("metadata top 10 = %v, want %v", got, want)
			}
		}
	})
}

// TestApproximateSearchBreaksExactTiesByID: documents with identical
// vectors are returned in id order, through the graph and the scan.
func TestApproximateSearchBreaksExactTiesByID(t *testing.T) {
	a, b := make([]float32, 64), make([]float32, 64)
	for i := range a {
		a[i] = float32(i%7) / 7
		b[i] = float32(i%5) / 5
	}
	var docs []engine.Document
	for id := int64(1); id <= 400; id++ {
		v := a
		if id%4 == 0 {
			v = b
		}
		docs = append(docs, engine.Document{ID: id, Rev: 1, GroupIDs: []int64{1}, ContentVectors: [][]float32{v}})
	}
	for _, mode := range []GraphMode{GraphAlways, GraphNever} {
		e, err := Open("", Options{InMemory: true, VectorGraph: mode})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Upsert(context.Background(), docs); err != nil {
			t.Fatal(err)
		}
		got := vectorSearch(t, e, b, 20, "content", nil)
		want := []int64{4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80}
		if !slices.Equal(got, want) {
			t.Errorf("graph mode %d: top 20 = %v, want %v", mode, got, want)
		}
		e.Close()
	}
}

// TestVectorIndexFollowsUpdatesDeletesAndRestores: a document written
// again with other vectors is found by its new vectors only; a deleted
// one is never found; one restored with its former vectors is found again
// without its vectors being added twice.
func TestVectorIndexFollowsUpdatesDeletesAndRestores(t *testing.T) {
	ctx := context.Background()
	c := newANNCorpus(t, 500)
	e := graphEngine(t, c.docs)
	target := c.contentByID[42]
	if got := vectorSearch(t, e, target, 1, "content", nil); !slices.Equal(got, []int64{42}) {
		t.Fatalf("nearest to document 42's vector = %v", got)
	}
	set := e.vecs.sets[setKey{dim: 256}]
	appended := set.full.n.Load()

	// Metadata-only change: same vectors, nothing appended.
	d := c.docs[41]
	d.Rev = 2
	if _, err := e.Upsert(ctx, []engine.Document{d}); err != nil {
		t.Fatal(err)
	}
	if n := set.full.n.Load(); n != appended {
		t.Errorf("rewriting a document with its vectors appended %d vectors", n-appended)
	}
	// Delete: never found.
	if err := e.Delete(ctx, 42, 3); err != nil {
		t.Fatal(err)
	}
	for _, q := range [][]float32{target, c.long[0]} {
		if got := vectorSearch(t, e, q, 100, "content", nil); slices.Contains(got, 42) {
			t.Fatalf("deleted document 42 found: %v", got)
		}
	}
	// Restore with the same vectors: found again. The delete erased its
	// vectors, so they are appended again (its one content passage).
	d.Rev = 4
	if _, err := e.Upsert(ctx, []engine.Document{d}); err != nil {
		t.Fatal(err)
	}
	if got := vectorSearch(t, e, target, 1, "content", nil); !slices.Equal(got, []int64{42}) {
		t.Fatalf("restored document 42 not found: %v", got)
	}
	if n := set.full.n.Load(); n != appended+1 {
		t.Errorf("restoring a document appended %d content vectors, want 1", n-appended)
	}
	// New vectors: found by them, not by the old ones.
	d.Rev = 5
	d.ContentVectors = [][]float32{c.contentByID[7]}
	if _, err := e.Upsert(ctx, []engine.Document{d}); err != nil {
		t.Fatal(err)
	}
	if got := vectorSearch(t, e, target, 3, "content", nil); slices.Contains(got, 42) {
		t.Errorf("document 42 found by its replaced vector: %v", got)
	}
	if got := vectorSearch(t, e, c.contentByID[7], 2, "content", nil); !slices.Equal(got, []int64{7, 42}) {
		t.Errorf("nearest to the new vector = %v, want [7 42]", got)
	}
}

// TestVectorIndexSurvivesReopenAndCrash: the vector index read back at
// open (after Close), after a crash (the directory as a kill -9 leaves it:
// the checkpoint older than the bleve index), and with its STATE damaged
// answers like the engine before. After the crash the vector log is
// replayed over the checkpoint: no vector is added again and the graph
// is the one the engine had (the same answers); a damaged STATE adds
// every vector again.
func TestVectorIndexSurvivesReopenAndCrash(t *testing.T) {
	// Shards of 128: the damaged graph is rebuilt by ann.Build, its
	// shards at once.
	for _, shard := range []int{0, 128} {
		t.Run(fmt.Sprintf("shard %d", shard), func(t *testing.T) {
			defer func(old int) { graphShard = old }(graphShard)
			graphShard = shard
			// The searches walk the graphs (at this size a scan pays).
			defer func(old bool) { forceWalk = old }(forceWalk)
			forceWalk = true
			testVectorIndexSurvives(t)
		})
	}
}

func testVectorIndexSurvives(t *testing.T) {
	ctx := context.Background()
	c := newANNCorpus(t, 600)
	root := t.TempDir()
	dir := filepath.Join(root, "idx")
	e, err := Open(dir, Options{VectorGraph: GraphAlways})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Upsert(ctx, c.docs[:400]); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(dir, Options{VectorGraph: GraphAlways})
	if err != nil {
		t.Fatal(err)
	}
	if a := e.vecs.added; a != 0 {
		t.Errorf("reopening after Close added %d vectors again", a)
	}
	// More writes, a delete, a changed vector; then the directory is
	// copied as it is (no Close: no checkpoint).
	if _, err := e.Upsert(ctx, c.docs[400:]); err != nil {
		t.Fatal(err)
	}
	if err := e.Delete(ctx, 5, 2); err != nil {
		t.Fatal(err)
	}
	d := c.docs[9]
	d.Rev, d.ContentVectors = 2, [][]float32{c.contentByID[11]}
	if _, err := e.Upsert(ctx, []engine.Document{d}); err != nil {
		t.Fatal(err)
	}
	queries := append(slices.Clone(c.short[:10]), c.long[:10]...)
	var want [][]int64
	for _, q := range queries {
		want = append(want, vectorSearch(t, e, q, 10, "content", nil))
	}
	crashed := filepath.Join(root, "crashed")
	copyDir(t, dir, crashed)
	e.Close()

	damaged := filepath.Join(root, "damaged")
	copyDir(t, crashed, damaged)
	state := filepath.Join(damaged, vectorsDir, stateFile)
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(state, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// A damaged graph file: the graph is built again from the
	// checkpoint's vectors and the log's vectors are added to it (its
	// records link into the lost graph); no document is added again.
	badGraph := filepath.Join(root, "bad-graph")
	copyDir(t, crashed, badGraph)
	graphs, _ := filepath.Glob(filepath.Join(badGraph, vectorsDir, "c-*.graph"))
	if len(graphs) != 1 {
		t.Fatalf("content graph files %v", graphs)
	}
	if b, err = os.ReadFile(graphs[0]); err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(graphs[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name             string
		dir              string
		minAdds, maxAdds int
		same             bool
	}{
		// 400 documents' two vectors each were checkpointed at Close; the
		// 202 written after are in the log: replayed, none added again.
		{name: "after a crash", dir: crashed, minAdds: 0, maxAdds: 0, same: true},
		{name: "with a damaged graph", dir: badGraph, minAdds: 0, maxAdds: 0},
		// The log belongs to the damaged checkpoint: everything is added.
		{name: "with a damaged STATE", dir: damaged, minAdds: 1, maxAdds: 2 * 600},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Open(tt.dir, Options{VectorGraph: GraphAlways})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if a := e.vecs.added; a > tt.maxAdds || a < tt.minAdds {
				t.Errorf("open added %d vectors, want %d..%d", a, tt.minAdds, tt.maxAdds)
			}
			for k, s := range e.vecs.sets {
				if s.graph != nil && graphShard > 0 && !k.metadata && s.graph.Shards() < 2 {
					t.Fatalf("a content graph of %d vectors in %d shard(s), want several of %d", s.graph.Len(), s.graph.Shards(), graphShard)
				}
			}
			for i, q := range queries {
				got := vectorSearch(t, e, q, 10, "content", nil)
				if slices.Contains(got, 5) {
					t.Fatalf("query %d: deleted document 5 found", i)
				}
				if tt.same && !slices.Equal(got, want[i]) {
					t.Errorf("query %d: %v, before the crash %v", i, got, want[i])
				}
				if r := recallOf(got, want[i]); r < 0.9 {
					t.Errorf("query %d: %v, before the crash %v", i, got, want[i])
				}
			}
		})
	}
}

func copyDir(t testing.TB, from, to string) {
	t.Helper()
	// The index may still be merging. Each attempt copies bleve's root
	// files (root.bolt) first and the segment files after them: a segment
	// the copied root names and a merge removed meanwhile fails the walk
	// (copied again), and a segment newer than the copied root is an
	// unreferenced file. A complete attempt is a consistent index.
	copyFile := func(path string, d os.DirEntry) error {
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	}
	walk := func(roots bool) error {
		return filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if isRoot := d.Name() == "root.bolt"; isRoot != roots || (roots && d.IsDir()) {
				return nil
			}
			return copyFile(path, d)
		})
	}
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = os.RemoveAll(to); err != nil {
			break
		}
		if err = walk(true); err == nil {
			err = walk(false)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
}
