package bleveengine

import (
	"encoding/gob"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/ann"
	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/search/scifact"
	"github.com/docrepo/docrepo/pkg/testenv"
)

// exportedVectors is embed.ExportedVectors (pkg/embed,
// TestUSEExportSciFact), the gob's layout.
type exportedVectors struct {
	Pieces   int
	DocIDs   []string
	Passages [][][]float32
	QueryIDs []string
	Queries  [][]float32
}

// TestSciFactUSEWalkRecall measures the engine's vector search on the
// use embedder's SciFact vectors (issues 20/23) against an exact scan of
// the same vectors in process: recall@10 and recall@100 of the engine's
// 100 nearest documents against the exact 10 and 100, and nDCG@10 /
// Recall@100 with the qrels, for each walk setting in walkSettings side
// by side on one index, with the perf probe's filters (none; 10 % and
// 1 % of the abstracts: the abstracts are in 100 visibility groups by
// position, the filters admit 10 or 1 of them). DOCREPO_USE_FILTERS=none
// measures the unfiltered searches only. DOCREPO_USE_VECTORS names the
// file TestUSEExportSciFact wrote:
//
//	cd pkg && DOCREPO_EMBED_EXPORT=/tmp/use-128.gob DOCREPO_USE_MODEL_DIR=... go test -run TestUSEExportSciFact ./embed/
//	cd pkg && DOCREPO_USE_VECTORS=/tmp/use-128.gob go test -run TestSciFactUSEWalkRecall -v ./search/bleveengine/
func TestSciFactUSEWalkRecall(t *testing.T) {
	ev := loadExportedVectors(t)
	sf, err := scifact.Load(testenv.DataDir(t, "scifact", scifact.EnvDir, "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const k = 100
	// DOCREPO_USE_EVERY=n keeps every n-th abstract (a graph over all
	// the passages takes hours to build on a busy 2-core machine);
	// DOCREPO_USE_GRAPH=never indexes without a graph (every search
	// scans the codes: what the defaults do on the whole corpus).
	if s := os.Getenv("DOCREPO_USE_EVERY"); s != "" {
		every, err := strconv.Atoi(s)
		if err != nil || every < 1 {
			t.Fatalf("DOCREPO_USE_EVERY=%q", s)
		}
		var ids []string
		var ps [][][]float32
		for i := 0; i < len(ev.DocIDs); i += every {
			ids, ps = append(ids, ev.DocIDs[i]), append(ps, ev.Passages[i])
		}
		ev.DocIDs, ev.Passages = ids, ps
	}
	mode := GraphAlways
	if os.Getenv("DOCREPO_USE_GRAPH") == "never" {
		mode = GraphNever
	}
	docs := make([]engine.Document, len(ev.DocIDs))
	passages := 0
	for i, sid := range ev.DocIDs {
		id, err := strconv.ParseInt(sid, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		docs[i] = engine.Document{ID: id, Rev: 1, Content: "text", ContentVectors: ev.Passages[i], GroupIDs: []int64{int64(i % 100)}}
		passages += len(ev.Passages[i])
	}
	start := time.Now()
	e, err := Open("", Options{InMemory: true, VectorGraph: mode})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for lo := 0; lo < len(docs); lo += 500 {
		if _, err := e.Upsert(t.Context(), docs[lo:min(lo+500, len(docs))]); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d abstracts, %d passages of %d pieces (%d dimensions), indexed (graph: %v) in %v",
		len(docs), passages, ev.Pieces, len(ev.Queries[0]), mode != GraphNever, time.Since(start).Round(time.Second))

	// The exact 100 nearest documents of each claim (a document's
	// distance is its nearest passage's, as the engine's float32).
	exact := make([][]int64, len(ev.Queries))
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for q := w; q < len(ev.Queries); q += workers {
				best := map[int64]float64{}
				ids := make([]int64, 0, len(docs))
				for i, d := range docs {
					b := math.Inf(1)
					for _, v := range ev.Passages[i] {
						b = min(b, float64(float32(ann.L2(ev.Queries[q], v))))
					}
					best[d.ID] = b
					ids = append(ids, d.ID)
				}
				slices.SortFunc(ids, func(a, b int64) int {
					switch {
					case best[a] < best[b]:
						return -1
					case best[a] > best[b]:
						return 1
					}
					return int(a - b)
				})
				exact[q] = ids
			}
		}()
	}
	wg.Wait()

	qi := map[string]int{}
	for i, id := range ev.QueryIDs {
		qi[id] = i
	}
	score := func(rank func(q int) []int64) scifact.Scores {
		s, err := sf.Score(func(qq scifact.Query) ([]string, error) {
			i, ok := qi[qq.ID]
			if !ok {
				t.Fatalf("claim %s not exported", qq.ID)
			}
			var out []string
			for _, id := range rank(i) {
				out = append(out, strconv.FormatInt(id, 10))
			}
			return out, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	group := map[int64]int64{}
	for i, d := range docs {
		group[d.ID] = int64(i % 100)
	}
	filters := []struct {
		name   string
		groups []int64
	}{{"none", nil}, {"10 %", []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, {"1 %", []int64{42}}}
	if os.Getenv("DOCREPO_USE_FILTERS") == "none" {
		filters = filters[:1]
	}
	settings := walkSettings(t)
	if mode == GraphNever {
		settings = settings[1:2] // the defaults (no graph: a scan)
	}
	for _, f := range filters {
		// The exact nearest admitted documents.
		want := make([][]int64, len(exact))
		for q, ids := range exact {
			for _, id := range ids {
				if f.groups == nil || slices.Contains(f.groups, group[id]) {
					want[q] = append(want[q], id)
					if len(want[q]) == k {
						break
					}
				}
			}
		}
		ex := score(func(q int) []int64 { return want[q] })
		t.Logf("filter %-4s %-28s recall@10 %.4f  recall@100 %.4f  nDCG@10 %.4f  R@100 %.4f", f.name, "exact scan (in process)", 1.0, 1.0, ex.NDCG10, ex.Recall100)
		for _, s := range settings {
			restore := s.apply()
			var sum10, sum100 float64
			got := make([][]int64, len(ev.Queries))
			v0, cpu0, t0 := walkVisits.Load(), cpuTime(), time.Now()
			for q, qv := range ev.Queries {
				got[q] = vectorSearch(t, e, qv, k, "content", f.groups)
			}
			cpu, wall, visits := cpuTime()-cpu0, time.Since(t0), walkVisits.Load()-v0
			restore()
			for q := range got {
				sum10 += recallOf(got[q][:min(10, len(got[q]))], want[q][:min(10, len(want[q]))])
				sum100 += recallOf(got[q], want[q])
			}
			sc := score(func(q int) []int64 { return got[q] })
			n := float64(len(ev.Queries))
			t.Logf("filter %-4s %-28s recall@10 %.4f  recall@100 %.4f  nDCG@10 %.4f  R@100 %.4f  %6.0f visits, %5.1f ms CPU, %5.1f ms wall per query",
				f.name, s.name, sum10/n, sum100/n, sc.NDCG10, sc.Recall100, float64(visits)/n,
				float64(cpu.Microseconds())/1000/n, float64(wall.Microseconds())/1000/n)
		}
	}
}

// walkSetting is a variant of the walk's parameters.
type walkSetting struct {
	name  string
	apply func() (restore func())
}

func walkSettings(t testing.TB) []walkSetting {
	with := func(name string, breadth int, flags ...*bool) walkSetting {
		return walkSetting{name: name, apply: func() func() {
			old := walkBreadth
			if breadth > 0 {
				walkBreadth = breadth
			}
			for _, f := range flags {
				*f = true
			}
			return func() {
				walkBreadth = old
				for _, f := range flags {
					*f = false
				}
			}
		}}
	}
	return []walkSetting{
		with("before (passage walk)", 0, &legacyWalk, &legacyPays),
		with("after (defaults)", 0),
		with("grouped walk, breadth 1k", 1, &forceWalk),
		with("grouped walk, breadth 2k", 2, &forceWalk),
		with("grouped walk, breadth 4k", 4, &forceWalk),
		with("grouped walk, breadth 8k", 8, &forceWalk),
		with("grouped walk, breadth 16k", 16, &forceWalk),
		with("passage walk (forced)", 0, &legacyWalk, &forceWalk),
		with("exact scan (engine)", 0, &forceScan),
	}
}

// loadExportedVectors reads the file DOCREPO_USE_VECTORS names (written by
// TestUSEExportSciFact in pkg/embed), skipping the test when it is unset.
func loadExportedVectors(t testing.TB) *exportedVectors {
	t.Helper()
	path := os.Getenv("DOCREPO_USE_VECTORS")
	if path == "" {
		t.Skip("set DOCREPO_USE_VECTORS to the file TestUSEExportSciFact (pkg/embed) wrote")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ev exportedVectors
	if err := gob.NewDecoder(f).Decode(&ev); err != nil {
		t.Fatal(err)
	}
	return &ev
}
