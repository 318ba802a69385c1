package bleveengine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/ann"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// BenchmarkLatency measures, side by side in one process, the CPU per
// search of the perf probe's modes that missed issue 23's latency targets
// through the stack at 830 k documents, before and after the changes
// that address them, on an index BenchmarkVectorScale built
// (DOCREPO_BENCH_INDEX, required; the scale generator's documents with
// their type and date):
//
//   - metarange (a type and three months, newest first): the record scan
//     (columnFilters off) against the metadata columns;
//   - the vector modes (unfiltered, a user who sees 10 %, ten folders of a
//     hundred, fts + vector): before, each code block of 1,024 vectors its
//     own allocation, every candidate's record read (eligibility) and
//     its vectors found by the documents' map (re-ranking), and a folder
//     filter's eligible documents read record by record; after, blocks
//     side by side in superblocks (ann.superBlocks), the eligible
//     documents as sets of slots (eligibleBySet) and candidates' vectors
//     by the set's owners (rerankByOwner). The engine's codes are copied
//     to the old layout once; the two are swapped between rounds.
//
// Per mode, 100 requests run in rounds alternating old and new (old then
// new, new then old) after an uncounted warm-up round of both; every
// request's results must be the same both ways. Logged per path: mean,
// p50, p95 and p99 of each search's CPU (getrusage around it), and the
// load average. DOCREPO_BENCH_MODES (comma-separated) narrows the modes,
// DOCREPO_BENCH_PATH=old or new runs one path (for -cpuprofile).
// DOCREPO_BENCH_OLD=layout makes the vector modes' old path the codes
// laid out by dimension, all else as new (an index of dense vectors,
// whose codes are laid out by vector: the layout alone side by side).
//
//	DOCREPO_BENCH_INDEX=/tmp/idx go test ./search/bleveengine -run XXX \
//	-bench 'Latency$' -benchtime 1x
func BenchmarkLatency(b *testing.B) {
	e := openScaleIndex(b)
	gen := newScaleGen(b, benchBlend())
	only, paths := onlyModes(), benchPaths()
	// The codes in the old width, made once.
	newCodes := map[*vecSet]*ann.Codes{}
	oldCodes := map[*vecSet]*ann.Codes{}
	layoutOnly := os.Getenv("DOCREPO_BENCH_OLD") == "layout"
	for _, s := range e.vecs.sets {
		newCodes[s], oldCodes[s] = s.codes, s.codes.WithLayout(1024, 1)
		if layoutOnly {
			// Old is main before the codes of dense sets were laid out
			// by vector: by dimension, all else as new.
			oldCodes[s] = s.codes.AsLayout(ann.ByDimension)
		}
	}
	runtime.GC()
	setCodes := func(fast bool) func() {
		for s := range newCodes {
			if fast {
				s.codes = newCodes[s]
			} else {
				s.codes = oldCodes[s]
			}
		}
		eligibleBySet, rerankByOwner = fast || layoutOnly, fast || layoutOnly
		return func() {
			for s, c := range newCodes {
				s.codes = c
			}
			eligibleBySet, rerankByOwner = true, true
		}
	}
	r := rand.New(rand.NewPCG(7, 7))
	word := func() string { return gen.vocab[50+r.IntN(1500)] }
	var metarange func() string
	for _, m := range probeModes(gen, r) {
		if m.name == "metarange" {
			metarange = m.gen
		}
	}
	vec := `{"vector": {"target": "content", "query": "x"}}`
	folders := `{"in": {"field": "filesbelongto", "value": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}}`
	user10 := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	modes := []struct {
		name   string
		vector bool
		groups []int64
		gen    func() string
		toggle func(bool) func()
	}{
		{"metarange", false, nil, metarange, setColumnFilters},
		{"metarange-user10%", false, user10, metarange, setColumnFilters},
		{"vector", true, nil, func() string { return `{"where": ` + vec + `}` }, setCodes},
		{"vector-user10%", true, user10, func() string { return `{"where": ` + vec + `}` }, setCodes},
		{"vector-10folders", true, nil, func() string { return `{"where": {"and": [` + folders + `, ` + vec + `]}}` }, setCodes},
		{"fts+vector", true, nil, func() string {
			return fmt.Sprintf(`{"where": {"and": [{"fts": {"query": %q}}, %s]}}`, word(), vec)
		}, setCodes},
	}
	for _, m := range modes {
		if len(only) > 0 && !only[m.name] {
			continue
		}
		reqs := make([]engine.Request, 100)
		for i := range reqs {
			reqs[i] = engine.Request{Query: queryOf(b, m.gen()), Unrestricted: m.groups == nil, GroupIDs: m.groups}
			if m.vector {
				reqs[i].QueryVector = gen.queryVector(r, word()+" "+word()+" "+word())
			}
		}
		c := timePaths(b, e, m.name, reqs, paths, 4, m.toggle)
		scaleLog(b, "%-18s CPU ms per search: old mean %6.2f %s | new mean %6.2f %s | %.2fx; %d searches each, %.0f hits/search; load average %s",
			m.name, c.meanMs(0), percentiles(c.each[0]), c.meanMs(1), percentiles(c.each[1]), c.meanMs(0)/c.meanMs(1),
			len(c.each[1]), float64(c.hits)/float64(len(reqs)), loadAvg())
	}
}
