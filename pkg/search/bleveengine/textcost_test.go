package bleveengine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// setFastPaths turns the cheaper search paths of issue 23 on or off
// (off: the paths they replace), returning a function restoring them.
func setFastPaths(on bool) func() {
	pos, folders, compact, pairs, cols, skip, window := segPositional, folderDriver, compactSlots, pairFirst, columnFilters, skipIneligible, windowFirst
	segPositional, folderDriver, compactSlots, pairFirst, columnFilters, skipIneligible, windowFirst = on, on, on, on, on, on, on
	restoreDecided := setFastDecided(on)
	restoreTop := setDirectTop(on)
	restorePrefix := setSegPrefix(on)
	restorePage := setTopPage(on)
	return func() {
		segPositional, folderDriver, compactSlots, pairFirst, columnFilters, skipIneligible, windowFirst = pos, folders, compact, pairs, cols, skip, window
		restoreDecided()
		restoreTop()
		restorePrefix()
		restorePage()
	}
}

// setFlag sets the package flag *p (one of the switches between a search
// path and the one it replaced) to on, returning a function restoring it.
func setFlag(p *bool, on bool) func() {
	old := *p
	*p = on
	return func() { *p = old }
}

// setLeafOnDemand turns off (or on) the score array of an fts clause that
// topCollector answers alone (leafOnDemand), returning a function
// restoring it.
func setLeafOnDemand(on bool) func() { return setFlag(&leafOnDemand, on) }

// setTopIDOrder turns topCollector's own comparison by score and id
// (topIDOrder) on or off, returning a function restoring it.
func setTopIDOrder(on bool) func() { return setFlag(&topIDOrder, on) }

// setTopPage turns leafOnDemand and topIDOrder together on or off
// (DOCREPO_BENCH_COMPARE=page), returning a function restoring them.
func setTopPage(on bool) func() {
	a, b := setLeafOnDemand(on), setTopIDOrder(on)
	return func() { a(); b() }
}

// setSegPrefix turns the reading of a lone prefix's matches segment by
// segment (eachPrefixMatch) on or off, returning a function restoring it.
func setSegPrefix(on bool) func() { return setFlag(&segPrefix, on) }

// setNear3 turns topCollector and oldPositions together on or off
// (DOCREPO_BENCH_COMPARE=near3), returning a function restoring them.
func setNear3(on bool) func() {
	a, b := setDirectTop(on), setOldPos(on)
	return func() { a(); b() }
}

// setDirectTop turns topCollector (a phrase or NEAR alone counted and its
// best matches kept, the others' scores skipped by bounds) on or off,
// returning a function restoring it.
func setDirectTop(on bool) func() { return setFlag(&directTop, on) }

// setSkipIneligible turns the skipping of documents a restricted caller
// cannot see in phrases and NEAR on or off, returning a function
// restoring it.
func setSkipIneligible(on bool) func() { return setFlag(&skipIneligible, on) }

// setColumnFilters turns the metadata columns' use on or off, returning a
// function restoring it.
func setColumnFilters(on bool) func() { return setFlag(&columnFilters, on) }

// setPairFirst turns the pair field's use on or off, returning a function
// restoring it.
func setPairFirst(on bool) func() { return setFlag(&pairFirst, on) }

// setFastDecided turns the cheaper reading of the documents the window
// pairs decide (fastDecided, decodedFreqs) on or off, returning a function restoring it.
func setFastDecided(on bool) func() {
	old, decoded, oldPos := fastDecided, decodedFreqs, oldPosFirst
	fastDecided, decodedFreqs, oldPosFirst = on, on, on
	return func() { fastDecided, decodedFreqs, oldPosFirst = old, decoded, oldPos }
}

// setOldPos turns the reading of the positions of documents older than a
// window pair from termFreqs.oldPositions on or off, returning a function
// restoring it.
func setOldPos(on bool) func() { return setFlag(&oldPosFirst, on) }

// setWindowFirst turns the window pairs' use on or off, returning a
// function restoring it.
func setWindowFirst(on bool) func() { return setFlag(&windowFirst, on) }

// TestFastPathsAgree runs phrase, NEAR and metadata searches on a small
// index of several segments (with updated and deleted documents) with the
// cheaper paths and with the ones they replace, as unrestricted and
// restricted callers: totals, hits, their order and their scores must be
// the same.
func TestFastPathsAgree(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, t.TempDir()+"/index", Options{})
	r := rand.New(rand.NewPCG(3, 4))
	vocab := strings.Fields("the of report annual tax invoice contract alpha beta gamma delta paid due late fee notice state art")
	text := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			// Skewed: the first words are frequent.
			ws[i] = vocab[min(r.IntN(len(vocab)), r.IntN(len(vocab)))]
		}
		return strings.Join(ws, " ")
	}
	doc := func(id, rev int64) engine.Document {
		return engine.Document{
			ID: id, Rev: rev, GroupIDs: []int64{id % 5}, FolderIDs: []int64{(id + rev) % 7, 10 + id%3},
			DocType: ptr([]string{"Invoice", "Contract", "Letter"}[id%3]), Content: text(5 + r.IntN(40)),
			ContentVectors: [][]float32{{r.Float32(), r.Float32(), r.Float32()}},
		}
	}
	// Batches of their own make several segments.
	for b := range 6 {
		var docs []engine.Document
		for i := range 150 {
			docs = append(docs, doc(int64(b*150+i+1), 1))
		}
		if _, err := e.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	for id := int64(1); id <= 900; id += 11 {
		if _, err := e.Upsert(ctx, []engine.Document{doc(id, 2)}); err != nil {
			t.Fatal(err)
		}
	}
	for id := int64(5); id <= 900; id += 13 {
		if err := e.Delete(ctx, id, 3); err != nil {
			t.Fatal(err)
		}
	}
	fts := func(q string) string { return fmt.Sprintf(`{"where": {"fts": {"query": %q}}}`, q) }
	queries := []string{
		fts(`"annual report"`), fts(`"the report"`), fts(`"tax of the"`), fts(`"state of the art"`),
		fts(`"late fee notice"`), fts(`"of the"`), fts(`"zzz report"`),
		// Pairs: repeated words, words never adjacent in that order,
		// stems split by the analysis (not exact tokens: no pairs), a
		// phrase excluded (not scored), three and four words.
		fts(`"report report"`), fts(`"notice late"`), fts(`annual-report`), fts(`late-notice`), fts(`"annual-report"`),
		fts(`tax -"annual report"`), fts(`"alpha beta gamma"`), fts(`"report annual report tax"`),
		fts(`*N2"annual report" tax`), fts(`*N1"late fee" "paid due"`),
		// One clause repeated: any occurrence is a window.
		fts(`*N5"report report"`), fts(`*N0"tax tax tax"`), fts(`*N2"annual report" "annual report"`),
		fts(`*N"the the"`),
		fts(`*N5"annual report"`), fts(`*N"tax invoice"`), fts(`*N0"paid due"`), fts(`*N3"the of report"`),
		fts(`*NP2"annual report" "tax invoice"`), fts(`*N5"fee zzz"`),
		fts(`"annual report" OR *N2"late fee"`), fts(`"annual report" -"tax invoice"`), fts(`tax "paid due"`),
		fts(`"annual report" tax*`),
		// Prefixes alone (of several words: alpha, annual, art; the,
		// tax; delta, due): the whole search (a page of its matches, all
		// of score 1), beside a metadata clause; none matching.
		fts(`a*`), fts(`t*`), fts(`zz*`),
		fmt.Sprintf(`{"where": {"fts": {"query": %q}}, "limit": 7, "offset": 40}`, `d*`),
		fmt.Sprintf(`{"where": {"fts": {"query": %q}}, "sort": [{"field": "doc_type"}]}`, `a*`),
		// The default order's ties broken by id either way (topCollector
		// compares score and id itself): a prefix (all of score 1) and
		// words of different scores.
		fmt.Sprintf(`{"where": {"fts": {"query": %q}}, "limit": 9, "offset": 3, "sort": [{"field": "_score", "direction": "desc"}, {"field": "id", "direction": "desc"}]}`, `t*`),
		fmt.Sprintf(`{"where": {"fts": {"query": %q}}, "limit": 30, "sort": [{"field": "_score", "direction": "desc"}, {"field": "id", "direction": "desc"}]}`, `tax OR late`),
		fmt.Sprintf(`{"where": {"fts": {"query": %q}}, "limit": 30}`, `tax OR late`),
		`{"where": {"and": [{"eq": {"field": "filesbelongto", "value": 4}}, {"fts": {"query": "d*"}}]}}`,
		`{"where": {"or": [{"eq": {"field": "doc_type", "value": "Letter"}}, {"fts": {"query": "a*"}}]}}`,
		fmt.Sprintf(`{"where": {"fts": {"query": %q}}, "limit": 7, "offset": 5}`, `*N4"report tax"`),
		fmt.Sprintf(`{"where": {"fts": {"query": %q}}, "sort": [{"field": "doc_type"}]}`, `"annual report"`),
		// Restricted to the nearest documents: the positional searcher
		// is advanced to them.
		`{"where": {"and": [{"fts": {"query": "\"annual report\""}}, {"vector": {"target": "content", "query": "q"}}]}, "options": {"vector_k": 300}}`,
		`{"where": {"and": [{"fts": {"query": "*N3\"tax report\""}}, {"vector": {"target": "content", "query": "q"}}]}, "options": {"vector_k": 300}}`,
		`{"where": {"eq": {"field": "filesbelongto", "value": 3}}}`,
		`{"where": {"eq": {"field": "filesbelongto", "value": 11}}, "limit": 50, "offset": 30}`,
		`{"where": {"eq": {"field": "filesbelongto", "value": 99}}}`,
		`{"where": {"in": {"field": "filesbelongto", "value": [2, 11]}}, "sort": [{"field": "doc_type", "direction": "desc"}]}`,
		`{"where": {"and": [{"eq": {"field": "filesbelongto", "value": 4}}, {"eq": {"field": "doc_type", "value": "Invoice"}}]}}`,
		`{"where": {"and": [{"eq": {"field": "filesbelongto", "value": 4}}, {"fts": {"query": "\"annual report\""}}]}}`,
		`{"where": {"or": [{"eq": {"field": "filesbelongto", "value": 4}}, {"eq": {"field": "doc_type", "value": "Letter"}}]}}`,
		`{"where": {"not": {"eq": {"field": "filesbelongto", "value": 4}}}}`,
		`{"where": {"ne": {"field": "filesbelongto", "value": 4}}}`,
	}
	callers := []struct {
		name string
		req  engine.Request
	}{
		{"unrestricted", engine.Request{Unrestricted: true}},
		{"groups 1,3", engine.Request{GroupIDs: []int64{1, 3}}},
	}
	compare := func(phase string) {
		t.Helper()
		matched := 0
		for _, c := range callers {
			for _, body := range queries {
				req := c.req
				req.Query = queryOf(t, body)
				req.QueryVector = []float32{0.3, 0.6, 0.2}
				want, got, werr, gerr := searchOldNew(ctx, e, req, setFastPaths)
				if (werr != nil) != (gerr != nil) {
					t.Fatalf("%s, %s %s: errors differ: %v, %v", phase, c.name, body, werr, gerr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s, %s %s:\n got %+v\nwant %+v", phase, c.name, body, got, want)
				}
				if want.Total > 0 {
					matched++
				}
			}
		}
		// The comparison means something only when most searches match.
		if matched < len(queries) {
			t.Fatalf("%s: only %d of %d searches matched anything", phase, matched, 2*len(queries))
		}
	}
	compare("after loading")
	// Writes after the callers' statistics views are cached: documents
	// move between groups and folders, some are deleted, new ones come.
	for id := int64(2); id <= 900; id += 17 {
		d := doc(id, 10)
		d.GroupIDs = []int64{(id + 1) % 5}
		if _, err := e.Upsert(ctx, []engine.Document{d}); err != nil {
			t.Fatal(err)
		}
	}
	for id := int64(3); id <= 900; id += 19 {
		if err := e.Delete(ctx, id, 11); err != nil {
			t.Fatal(err)
		}
	}
	var more []engine.Document
	for id := int64(901); id <= 960; id++ {
		more = append(more, doc(id, 1))
	}
	if _, err := e.Upsert(ctx, more); err != nil {
		t.Fatal(err)
	}
	compare("after more writes")
}

// BenchmarkTextCost measures the CPU per search of the text and metadata
// modes of the perf probe with the cheaper paths of issue 23 and with the
// paths they replace, side by side on one index (DOCREPO_BENCH_INDEX,
// built by BenchmarkVectorScale): per mode and caller (unrestricted, and
// a user who sees 10 % of the documents, asking the same), 100 requests run
// in rounds alternating the two (old then new, new then old) after an
// uncounted warm-up round of both, and every
// request's results must be the same both ways. DOCREPO_BENCH_MODES (a
// comma-separated list, e.g. "near,phrase") and DOCREPO_BENCH_WHO
// (unrestricted or user10%) narrow it; DOCREPO_BENCH_PATH=old or new runs
// one path only (for -cpuprofile). DOCREPO_BENCH_COMPARE=pairs makes the
// old path every fast path but the pair field's (setPairFirst), so that
// the pair field is measured alone; =columns the same for the metadata
// columns (setColumnFilters), =window for the window pairs
// (setWindowFirst), =decided for the cheaper reading of the documents
// they decide (setFastDecided), =top for the counting of a NEAR's matches
// with only the best kept and scored (setDirectTop), =oldpos for the
// positions of the documents older than a window pair from memory
// (setOldPos), =near3 for both, =prefix for a lone prefix's matches read
// segment by segment (setSegPrefix), =leaf for no score array when
// topCollector answers (setLeafOnDemand), =idorder for topCollector's own
// comparison by score and id (setTopIDOrder), =page for both
// (setTopPage). DOCREPO_BENCH_MODES=nearC adds a mode not in the
// probe: NEAR of two of the ten commonest terms of C (the window pairs'
// worst case: most of the index matches); =nearS the stack probe's NEAR
// on an index the stack imported (stackNearMode). Besides the mean, each path's p50,
// p95 and p99 of the CPU time of single searches (getrusage around each)
// are logged.
//
//	DOCREPO_BENCH_INDEX=/tmp/idx go test ./search/bleveengine -run XXX \
//	-bench TextCost -benchtime 1x
func BenchmarkTextCost(b *testing.B) {
	e := openScaleIndex(b)
	gen := newScaleGen(b, false)
	only, paths := onlyModes(), benchPaths()
	toggle := setFastPaths
	switch os.Getenv("DOCREPO_BENCH_COMPARE") {
	case "pairs":
		toggle = setPairFirst
	case "columns":
		toggle = setColumnFilters
	case "visible":
		toggle = setSkipIneligible
	case "window":
		toggle = setWindowFirst
	case "decided":
		toggle = setFastDecided
	case "top":
		toggle = setDirectTop
	case "prefix":
		toggle = setSegPrefix
	case "oldpos":
		toggle = setOldPos
	case "near3":
		toggle = setNear3
	case "leaf":
		toggle = setLeafOnDemand
	case "idorder":
		toggle = setTopIDOrder
	case "page":
		toggle = setTopPage
	}
	for _, who := range scaleFilters[:2] {
		name := map[string]string{"none": "unrestricted", "10%": "user10%"}[who.name]
		if w := os.Getenv("DOCREPO_BENCH_WHO"); w != "" && w != name {
			continue
		}
		// The same requests for both callers.
		modes := probeModes(gen, rand.New(rand.NewPCG(7, 7)))
		if only["nearC"] {
			modes = append(modes, commonNearMode(e, rand.New(rand.NewPCG(7, 8))))
		}
		if only["nearS"] {
			n, _ := e.Count(context.Background())
			modes = append(modes, stackNearMode(int(n), rand.New(rand.NewPCG(7, 9))))
		}
		for _, m := range modes {
			if m.vector || len(only) > 0 && !only[m.name] {
				continue
			}
			reqs := make([]engine.Request, 100)
			for i := range reqs {
				reqs[i] = engine.Request{Query: queryOf(b, m.gen()), Unrestricted: who.groups == nil, GroupIDs: who.groups}
			}
			var topTotal, topSkipped int
			topObserved = func(n, s int) { topTotal, topSkipped = topTotal+n, topSkipped+s }
			c := timePaths(b, e, name+" "+m.name, reqs, paths, 4, toggle)
			topObserved = nil
			if topTotal > 0 {
				scaleLog(b, "%-12s %-8s topCollector: %.1f %% of the matches it counted not scored", name, m.name, 100*float64(topSkipped)/float64(topTotal))
			}
			scaleLog(b, "%-12s %-8s CPU per search: old %6.2f ms, new %6.2f ms (%.2fx); old %s, new %s ms; %d searches each, %.0f hits/search; load average %s",
				name, m.name, c.meanMs(0), c.meanMs(1), c.meanMs(0)/c.meanMs(1), percentiles(c.each[0]), percentiles(c.each[1]), len(c.each[1]), float64(c.hits)/float64(len(reqs)), loadAvg())
			scaleLog(b, "%-12s %-8s allocated per search: old %.0f KiB, new %.0f KiB; collections: old %d, new %d",
				name, m.name, c.allocPerSearch(0), c.allocPerSearch(1), c.gcs[0], c.gcs[1])
		}
	}
	e.freqs.mu.Lock()
	scaleLog(b, "decoded postings held (termFreqs): %.1f MiB in %d segments; positions of older documents %.1f MiB", float64(e.freqs.bytes)/(1<<20), len(e.freqs.segs), float64(e.freqs.oldBytes)/(1<<20))
	e.freqs.mu.Unlock()
}

// stackNearMode is the through-the-stack probe's FTS NEAR
// (services/search/bench/probe.go) on an index the stack imported from
// services/search/bench/synthetic.go's corpus of n documents: two words six
// positions apart of a document, drawn as that corpus draws them (its
// vocabulary is not BenchmarkVectorScale's: its syllable count is drawn
// anew at each syllable).
func stackNearMode(n int, r *rand.Rand) probeMode {
	vr := rand.New(rand.NewPCG(1, 2))
	cons, vows := "bcdfghjklmnprstvz", "aeiou"
	seen := map[string]bool{}
	var vocab []string
	for len(vocab) < 20000 {
		var b strings.Builder
		for s := 0; s < 2+vr.IntN(3); s++ {
			b.WriteByte(cons[vr.IntN(len(cons))])
			b.WriteByte(vows[vr.IntN(len(vows))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	words := func(i int) []string {
		dr := rand.New(rand.NewPCG(uint64(i), 99))
		z := rand.NewZipf(dr, 1.1, 2, uint64(len(vocab)-1))
		out := make([]string, 60+dr.IntN(60))
		for j := range out {
			out[j] = vocab[z.Uint64()]
		}
		return out
	}
	return probeMode{"nearS", false, func() string {
		w := words(r.IntN(max(n, 1)))
		p := r.IntN(len(w) - 10)
		return fmt.Sprintf(`{"where": {"fts": {"query": %q}}}`, `*N5"`+w[p]+" "+w[p+6]+`"`)
	}}
}

// commonNearMode is NEAR (*N5) of two distinct terms among the ten that
// joined C first (the commonest), drawn from r.
func commonNearMode(e *Engine, r *rand.Rand) probeMode {
	var top []string
	for _, v := range e.common.Load().versions {
		top = append(top, v...)
	}
	top = top[:min(10, len(top))]
	return probeMode{"nearC", false, func() string {
		if len(top) < 2 {
			return `{"where": {"fts": {"query": "*N5\"a b\""}}}`
		}
		i := r.IntN(len(top))
		j := (i + 1 + r.IntN(len(top)-1)) % len(top)
		return fmt.Sprintf(`{"where": {"fts": {"query": %q}}}`, `*N5"`+top[i]+" "+top[j]+`"`)
	}}
}
