package bleveengine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/ann"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// denseDocs returns n documents with 1-3 content passages and a metadata
// vector, random unit vectors of dim values (dense: queries walk the
// graph).
func denseDocs(n, dim int) []engine.Document {
	r := rand.New(rand.NewPCG(5, 6))
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return unitVec(v)
	}
	docs := make([]engine.Document, n)
	for i := range docs {
		var ps [][]float32
		for range 1 + r.IntN(3) {
			ps = append(ps, vec())
		}
		docs[i] = engine.Document{ID: int64(i + 1), Rev: 1, Content: "text", ContentVectors: ps, MetadataVector: vec()}
	}
	return docs
}

func contentGraph(t *testing.T, vx *vecIndex, dim int) []byte {
	t.Helper()
	s := vx.sets[setKey{dim: dim}]
	if s == nil || s.graph == nil {
		t.Fatal("no content graph")
	}
	var buf bytes.Buffer
	if _, err := s.graph.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func copyVectorFiles(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		b, err := os.ReadFile(filepath.Join(from, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, en.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestVectorLogTornAtEveryByte: a crash leaves the vector log cut at any
// byte of its last records. Replayed over the checkpoint, it gives the
// graph the engine had after some whole write, byte for byte (the one
// after the last write whose records are whole, or, cut in a write's
// last records, the graph with that write's vectors linked but the
// document not bound), never a graph with a half-applied record; a
// document is bound only when its records are whole. A whole engine
// opened from such a directory adds again exactly the vectors of the
// document whose records were cut, and answers vector queries like an
// exact scan.
func TestVectorLogTornAtEveryByte(t *testing.T) {
	for _, shard := range []int{0, 64} {
		t.Run(fmt.Sprintf("graph shards of %d", shard), func(t *testing.T) {
			defer func(old int) { graphShard = old }(graphShard)
			graphShard = shard
			testVectorLogTorn(t)
		})
	}
}

// testVectorLogTorn is TestVectorLogTornAtEveryByte with new graphs of
// graphShard's shards (0: the default, one shard at this size; 64: the
// checkpoint's graph of 3 shards and the log's records in shards 2-4).
func testVectorLogTorn(t *testing.T) {
	ctx := context.Background()
	const dim = 16
	docs := denseDocs(160, dim)
	root := t.TempDir()
	dir := filepath.Join(root, "idx")
	opts := Options{VectorGraph: GraphAlways}
	e, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Upsert(ctx, docs[:150]); err != nil {
		t.Fatal(err)
	}
	for k, s := range e.vecs.sets {
		if s.graph != nil && graphShard > 0 && !k.metadata && s.graph.Shards() < 2 {
			t.Fatalf("a content graph of %d vectors in %d shard(s), want several of %d", s.graph.Len(), s.graph.Shards(), graphShard)
		}
	}
	if err := e.Close(); err != nil { // a checkpoint
		t.Fatal(err)
	}
	if e, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Upsert(ctx, docs[150:156]); err != nil {
		t.Fatal(err)
	}
	logPath := e.vecs.logPath(e.vecs.seq)
	type mark struct {
		size  int64
		graph []byte
	}
	snap := func() mark {
		st, err := os.Stat(logPath)
		if err != nil {
			t.Fatal(err)
		}
		return mark{size: st.Size(), graph: contentGraph(t, e.vecs, dim)}
	}
	// The last documents one write each, of one passage: a write logs
	// the content vector, the metadata vector and the document's bind.
	marks := []mark{snap()}
	last := docs[156:]
	for i := range last {
		last[i].ContentVectors = last[i].ContentVectors[:1]
	}
	for _, d := range last {
		if _, err := e.Upsert(ctx, []engine.Document{d}); err != nil {
			t.Fatal(err)
		}
		marks = append(marks, snap())
	}
	crashed := filepath.Join(root, "crashed")
	copyDir(t, dir, crashed)
	full, err := os.ReadFile(filepath.Join(crashed, vectorsDir, filepath.Base(logPath)))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(full)) != marks[len(marks)-1].size {
		t.Fatalf("log of %d bytes, %d written", len(full), marks[len(marks)-1].size)
	}

	// Every byte of the last write's records (a trial rewrites the files
	// recovery changes: the vector files it cuts and the log).
	trial := filepath.Join(root, "trial")
	copyVectorFiles(t, filepath.Join(crashed, vectorsDir), trial)
	f32s, _ := filepath.Glob(filepath.Join(trial, "*.f32"))
	saved := map[string][]byte{}
	for _, p := range f32s {
		saved[p], _ = os.ReadFile(p)
	}
	from := marks[len(marks)-2].size
	for cut := from; cut <= int64(len(full)); cut++ {
		// k: the documents of last whose records are whole.
		k := 0
		for k+1 < len(marks) && marks[k+1].size <= cut {
			k++
		}
		for p, b := range saved {
			if st, err := os.Stat(p); err == nil && st.Size() == int64(len(b)) {
				continue // not cut by the last trial
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(trial, filepath.Base(logPath)), full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		vx := newVecIndex(trial, GraphAlways, ann.ByVector)
		if err := vx.readState(); err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if err := vx.recover(); err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		g := contentGraph(t, vx, dim)
		switch {
		case bytes.Equal(g, marks[k].graph):
		case k+1 < len(marks) && bytes.Equal(g, marks[k+1].graph):
			// The next document's content vector is whole, its bind
			// record is not.
		default:
			t.Fatalf("cut at %d (after %d whole documents): the replayed graph is none the engine had (%d nodes; %d bytes vs %d, first difference at %d)", cut, k, vx.sets[setKey{dim: dim}].graph.Len(), len(g), len(marks[k].graph), firstDiff(g, marks[k].graph))
		}
		for i, d := range last {
			_, bound := vx.docs[d.ID]
			if bound != (i < k) {
				t.Fatalf("cut at %d (after %d whole documents): document %d bound %v", cut, k, d.ID, bound)
			}
		}
		for _, d := range docs[150:156] {
			if _, ok := vx.docs[d.ID]; !ok {
				t.Fatalf("cut at %d: document %d of a whole write not bound", cut, d.ID)
			}
		}
		vx.close()
	}

	// Whole engines: cut one byte short of each of the last writes.
	for i := 1; i < len(marks); i++ {
		d := last[i-1]
		cutDir := filepath.Join(root, "cut")
		_ = os.RemoveAll(cutDir)
		copyDir(t, crashed, cutDir)
		if err := os.Truncate(filepath.Join(cutDir, vectorsDir, filepath.Base(logPath)), marks[i].size-1); err != nil {
			t.Fatal(err)
		}
		e2, err := Open(cutDir, opts)
		if err != nil {
			t.Fatal(err)
		}
		// The cut write's two vectors and those of the writes after it.
		if want := 2 * (len(marks) - i); e2.vecs.added != want {
			t.Errorf("log cut in document %d's write: open added %d vectors, want %d", d.ID, e2.vecs.added, want)
		}
		for _, q := range []engine.Document{d, docs[3], docs[152]} {
			got := vectorSearch(t, e2, q.ContentVectors[0], 10, "content", nil)
			want := exactContent(docs, q.ContentVectors[0], 10)
			if !slices.Equal(got, want) {
				t.Errorf("log cut in document %d's write: nearest to %d's passage %v, exact %v", d.ID, q.ID, got, want)
			}
		}
		if err := e2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// exactContent returns the k documents nearest to q by their nearest
// passage (ties by id).
func exactContent(docs []engine.Document, q []float32, k int) []int64 {
	dist := map[int64]float64{}
	var ids []int64
	for _, d := range docs {
		best := -1.0
		for _, p := range d.ContentVectors {
			var s float64
			for i := range p {
				x := float64(p[i]) - float64(q[i])
				s += x * x
			}
			if best < 0 || s < best {
				best = s
			}
		}
		dist[d.ID] = best
		ids = append(ids, d.ID)
	}
	sortByDist(ids, dist)
	return ids[:k]
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestVectorLogSurvivesKill: a process writing documents (batches of 5)
// is killed with SIGKILL in the middle of its writes, after 30 batches
// had returned. The next Open replays the log: every document of a
// batch whose Upsert returned is found first by its own passage, and
// Open adds again at most the vectors of the batch in flight (before the
// log it added every vector written since the checkpoint).
func TestVectorLogSurvivesKill(t *testing.T) {
	testVectorLogSurvivesKill(t, "TestVectorLogSurvivesKill")
}

// TestVectorLogSurvivesKillSharded is TestVectorLogSurvivesKill with the
// index's graphs in shards of 128 vectors: the checkpoint's graph is read
// back with its shards in the child, whose Adds go on in them, and
// replayed after the kill.
func TestVectorLogSurvivesKillSharded(t *testing.T) {
	defer func(old int) { graphShard = old }(graphShard)
	graphShard = 128
	testVectorLogSurvivesKill(t, "TestVectorLogSurvivesKillSharded")
}

// testVectorLogSurvivesKill is TestVectorLogSurvivesKill run as test
// name (the child runs it again).
func testVectorLogSurvivesKill(t *testing.T, name string) {
	const dim, batch = 32, 5
	docs := denseDocs(700, dim)
	opts := Options{VectorGraph: GraphAlways}
	ctx := context.Background()
	if dir := os.Getenv("DOCREPO_TEST_KILL_CHILD"); dir != "" {
		e, err := Open(dir, opts)
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(1)
		}
		for i := 100; i < len(docs); i += batch {
			if _, err := e.Upsert(ctx, docs[i:i+batch]); err != nil {
				fmt.Println("upsert:", err)
				os.Exit(1)
			}
			fmt.Printf("acked %d\n", i+batch)
		}
		fmt.Println("all written")
		time.Sleep(time.Hour) // killed by the parent
	}
	dir := filepath.Join(t.TempDir(), "idx")
	e, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Upsert(ctx, docs[:100]); err != nil {
		t.Fatal(err)
	}
	if graphShard > 0 {
		for k, s := range e.vecs.sets {
			if !k.metadata && s.graph != nil && s.graph.Shards() < 2 {
				t.Fatalf("a content graph of %d vectors in %d shard(s), want several of %d", s.graph.Len(), s.graph.Shards(), graphShard)
			}
		}
	}
	if err := e.Close(); err != nil { // a checkpoint
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DOCREPO_TEST_KILL_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	acked := 0
	for acked < 100+30*batch && lines.Scan() {
		if n, err := fmt.Sscanf(lines.Text(), "acked %d", &acked); n != 1 || err != nil {
			t.Logf("child: %s", lines.Text())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() { // acknowledgements already written
		fmt.Sscanf(lines.Text(), "acked %d", &acked)
	}
	_ = cmd.Wait()
	if acked < 100+30*batch {
		t.Fatalf("the child acknowledged %d documents, want %d", acked, 100+30*batch)
	}
	if e, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	inFlight := 0
	for _, d := range docs[acked:min(len(docs), acked+batch)] {
		inFlight += len(d.ContentVectors) + 1
	}
	if e.vecs.added > inFlight {
		t.Errorf("open after the kill added %d vectors, want at most the %d of the batch in flight (%d documents acknowledged)", e.vecs.added, inFlight, acked)
	}
	if graphShard > 0 {
		// The graph's shards are walked, not scanned past.
		defer func(old bool) { forceWalk = old }(forceWalk)
		forceWalk = true
	}
	for _, d := range docs[:acked] {
		if got := vectorSearch(t, e, d.ContentVectors[0], 1, "content", nil); !slices.Equal(got, []int64{d.ID}) {
			t.Errorf("nearest to document %d's passage after the kill: %v", d.ID, got)
		}
	}
	t.Logf("%d documents acknowledged; open replayed %d vectors and added %d", acked, e.vecs.replayed, e.vecs.added)
}

// TestSetRecordNamesTheGraphSettings: a set record names its graph's M
// and efConstruction, and the set the log creates on replay has a graph
// built with them; a record written before records named them (no
// settings after the graph flag) gives a graph of legacyGraphConfig, the
// settings its Add records were made with, whatever ann's defaults are
// now, and one written before graphs had shards a graph of one shard; a
// record that does not decode is refused.
func TestSetRecordNamesTheGraphSettings(t *testing.T) {
	dir := t.TempDir()
	vx := &vecIndex{dir: dir}
	l, err := openLog(filepath.Join(dir, "log.1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	vx.log = l
	defer l.close()
	logged := func(k setKey, cfg *ann.Config) []byte {
		var g *ann.Graph
		if cfg != nil {
			g = ann.New(k.dim, func(int32) []float32 { return nil }, *cfg)
		}
		vx.logSet(k, g)
		return slices.Clone(l.buf[1:])
	}
	wide := ann.Config{M: 24, EfConstruction: 200, Shard: 5000}
	oneShard := ann.Config{M: 24, EfConstruction: 200, Shard: ann.Unsharded}
	beforeShards := ann.Config{M: 24, EfConstruction: 100, Shard: ann.Unsharded}
	for _, tc := range []struct {
		name    string
		record  []byte
		key     setKey
		want    *ann.Config // nil: no graph
		corrupt bool
	}{
		{name: "logged, a graph", record: logged(setKey{dim: 8}, &wide), key: setKey{dim: 8}, want: &wide},
		{name: "logged, a graph of one shard", record: logged(setKey{dim: 7}, &oneShard), key: setKey{dim: 7}, want: &oneShard},
		{name: "before shards, a graph", record: []byte{0, 6, 1, 24, 100}, key: setKey{dim: 6}, want: &beforeShards},
		{name: "logged, no graph", record: logged(setKey{metadata: true, dim: 9}, nil), key: setKey{metadata: true, dim: 9}},
		{name: "before the settings, a graph", record: []byte{0, 10, 1}, key: setKey{dim: 10}, want: &legacyGraphConfig},
		{name: "before the settings, no graph", record: []byte{1, 11, 0}, key: setKey{metadata: true, dim: 11}},
		{name: "settings without a graph", record: []byte{0, 12, 0, 24, 100}, corrupt: true},
		{name: "M zero", record: []byte{0, 13, 1, 0, 100}, corrupt: true},
		{name: "efConstruction missing", record: []byte{0, 14, 1, 24}, corrupt: true},
		{name: "a byte too many", record: []byte{0, 15, 1, 24, 100, 0, 0}, corrupt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, cfg, err := decodeSet(tc.record)
			if tc.corrupt {
				if !errors.Is(err, errCorrupt) {
					t.Fatalf("err = %v, want errCorrupt", err)
				}
				return
			}
			if err != nil || k != tc.key {
				t.Fatalf("decoded %+v, %v; want %+v", k, err, tc.key)
			}
			s, err := vx.newSet(k, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.full.close()
			switch {
			case tc.want == nil && s.graph != nil:
				t.Fatalf("a graph of %+v, want none", s.graph.Config())
			case tc.want != nil && s.graph == nil:
				t.Fatalf("no graph, want one of %+v", *tc.want)
			case tc.want != nil && s.graph.Config() != *tc.want:
				t.Fatalf("a graph of %+v, want %+v", s.graph.Config(), *tc.want)
			}
		})
	}
}
