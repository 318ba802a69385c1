package bleveengine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/searcher"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// checkEvery is how many documents a loop handles between checks of the
// context.
const checkEvery = 4096

// match is a document matching a search, with its score.
type match struct {
	slot  int32
	score float64
}

// searchRun is the state of one Search.
type searchRun struct {
	e    *Engine
	ctx  context.Context
	r    index.IndexReader
	tab  *table
	q    *dsl.Query
	plan dsl.Plan
	req  *engine.Request
	res  *resolver
	// translated fts clauses
	nodes map[*dsl.FTS]*qnode
	// prefixTerms counts the terms the prefixes of all fts clauses have
	// expanded to: Options.MaxPrefixTerms bounds the whole query.
	prefixTerms int
	// view is the statistics of the documents the caller can see.
	view *statsView
	// cols is the column test the metadata filters imply (nil: none), read
	// by scan before a record.
	cols *colFilter
	// top, when not nil, collects the page of a search whose where
	// clause is top.f alone (top.used once it has).
	top *topCollector
}

// Search executes req (see the package documentation for the semantics).
func (e *Engine) Search(ctx context.Context, req engine.Request) (engine.Result, error) {
	if req.Query == nil {
		return engine.Result{}, errors.New("bleveengine: search without a query")
	}
	plan := req.Plan
	if req.Query.Where != nil {
		// The plan is a pure function of the query; computing it here keeps
		// a caller from passing one that does not match.
		p, err := req.Query.Plan()
		if err != nil {
			return engine.Result{}, err
		}
		plan = p
	} else {
		plan = dsl.Plan{}
	}
	if err := ctx.Err(); err != nil {
		return engine.Result{}, searchErr(err)
	}
	if gateSearches {
		// Before the engine's lock: a search queued here holds nothing a
		// writer waits for.
		release, err := searchGate.enter(ctx, gateLease)
		if err != nil {
			return engine.Result{}, searchErr(err)
		}
		defer release()
		if testHookAdmitted != nil {
			testHookAdmitted()
		}
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return engine.Result{}, engine.ErrClosed
	}
	adv, err := e.idx.Advanced()
	if err != nil {
		return engine.Result{}, fmt.Errorf("bleveengine: search: %w", err)
	}
	r, err := adv.Reader()
	if err != nil {
		return engine.Result{}, fmt.Errorf("bleveengine: search: %w", err)
	}
	defer r.Close()
	run := &searchRun{
		e: e, ctx: ctx, r: r, tab: e.tab, q: req.Query, plan: plan, req: &req,
		res: e.slots.resolver(r, e.tab), nodes: map[*dsl.FTS]*qnode{},
	}
	res, err := run.execute()
	if err != nil {
		return engine.Result{}, searchErr(err)
	}
	return res, nil
}

// searchErr wraps err for the caller; context errors stay recognisable
// with errors.Is, *dsl.Error with errors.As.
func searchErr(err error) error {
	var de *dsl.Error
	if errors.As(err, &de) {
		return err
	}
	return fmt.Errorf("bleveengine: search: %w", err)
}

func (run *searchRun) checkCtx() error {
	return run.ctx.Err()
}

// eligibility decides whether the document in a slot may match: not
// deleted, visible to the caller, and passing the metadata filters.
type eligibility struct {
	visible func(*record) bool
	filters evalFn
}

func (e eligibility) ok(slot int32, r *record) bool {
	if r.deleted || !e.visible(r) {
		return false
	}
	ok, _ := e.filters(slot, r)
	return ok
}

// execute runs the search in its phases: the eligible documents (caller's
// groups and metadata filters), the vector clause's nearest neighbours,
// the fts clauses (restricted to those neighbours when there are any),
// the matching documents with their scores, and the requested page.
func (run *searchRun) execute() (engine.Result, error) {
	comp := &compiler{leaves: map[*dsl.FTS]*ftsLeaf{}}
	defer func() {
		for _, l := range comp.leaves {
			l.release()
		}
	}()
	eligible, err := run.eligibility(comp)
	if err != nil {
		return engine.Result{}, err
	}
	nearest, err := run.vectorCandidates(eligible)
	if err != nil {
		return engine.Result{}, err
	}
	if f := run.directClause(); f != nil {
		run.top = run.newTopCollector(f)
	}
	fullText, err := run.compileFullText(comp, nearest)
	if err != nil {
		return engine.Result{}, err
	}
	if run.top != nil && run.top.used {
		// The clause's matches were counted and the best kept.
		return run.pageTotal(run.top.matches(), run.top.total)
	}
	matches, err := run.collect(comp, eligible, nearest, fullText)
	if err != nil {
		return engine.Result{}, err
	}
	res, err := run.page(matches)
	// The page's hits copied what they need.
	putMatches(matches)
	return res, err
}

// matchBufs recycles the match lists of searches (tens of thousands of
// matches at scale: the largest allocation of a broad search).
var matchBufs sync.Pool

func getMatches() []match {
	if !compactSlots {
		return nil
	}
	if p, ok := matchBufs.Get().(*[]match); ok {
		return (*p)[:0]
	}
	return nil
}

func putMatches(ms []match) {
	if compactSlots && cap(ms) > 0 {
		matchBufs.Put(&ms)
	}
}

// eligibility compiles the visibility pre-filter and the metadata filters.
func (run *searchRun) eligibility(comp *compiler) (eligibility, error) {
	filters, err := comp.compileAll(run.plan.Filters)
	if err != nil {
		return eligibility{}, err
	}
	return eligibility{visible: visibility(run.req), filters: filters}, nil
}

// vectorCandidates is the vector clause: the k nearest eligible documents
// (nil without a vector clause).
func (run *searchRun) vectorCandidates(eligible eligibility) ([]neighbour, error) {
	v := run.plan.Vector
	if v == nil {
		return nil, nil
	}
	if len(run.req.QueryVector) == 0 {
		return nil, errors.New("request has a vector clause but no query vector")
	}
	k := run.q.Options.VectorK
	if k <= 0 {
		k = dsl.DefaultVectorK
	}
	nearest, err := run.nearest(run.req.QueryVector, k, v.Target == dsl.TargetMetadata, eligible)
	if err != nil || v.Target == dsl.TargetMetadata {
		return nearest, err
	}
	return nearest, run.rerankContent(nearest)
}

// compileFullText runs every fts clause over the index (only over the
// nearest documents when there is a vector clause) and compiles the fts
// part of the where tree.
func (run *searchRun) compileFullText(comp *compiler, nearest []neighbour) (evalFn, error) {
	var restrict []string
	if run.plan.Vector != nil {
		restrict = make([]string, len(nearest))
		for i, n := range nearest {
			restrict[i] = docID(n.id)
		}
	}
	for _, c := range run.plan.FullText {
		var werr error
		dsl.Walk(c, func(sub dsl.Clause) bool {
			f, ok := sub.(*dsl.FTS)
			if !ok || werr != nil || comp.leaves[f] != nil {
				return werr == nil
			}
			leaf, err := run.fts(f, restrict)
			if err != nil {
				werr = err
				return false
			}
			comp.leaves[f] = leaf
			return true
		})
		if werr != nil {
			return nil, werr
		}
	}
	return comp.compileAll(run.plan.FullText)
}

// collect returns every matching document with its score. With a vector
// clause the candidates are the nearest documents (scored 1/(1+d²) alone,
// or by BM25 when fts clauses narrow them); otherwise an fts conjunct's
// own matches (the fewest, when there are several) or, failing one, every
// document.
func (run *searchRun) collect(comp *compiler, eligible eligibility, nearest []neighbour, fullText evalFn) ([]match, error) {
	plan := run.plan
	if plan.Vector != nil {
		return nearestMatches(nearest, run.tab.recs, len(plan.FullText) > 0, fullText), nil
	}
	run.cols = run.tab.colFilter(plan.Filters)
	if d := driver(plan.FullText, comp.leaves); d != nil {
		// Every match matches this conjunct: only its matches need
		// evaluating.
		if len(d.slots) == 0 {
			return nil, run.checkCtx()
		}
		if fs, ok := run.tab.folderSlots(plan.Filters); ok && len(fs) < len(d.slots) {
			return run.scanFrom(fs, eligible, fullText)
		}
		return run.scan(d.slots, eligible, fullText)
	}
	if fs, ok := run.tab.folderSlots(plan.Filters); ok {
		// Only documents in the filter's folders can match.
		return run.scanFrom(fs, eligible, fullText)
	}
	if cf := run.cols; cf != nil {
		// Only documents passing the column tests can match: the columns
		// are scanned instead of every record.
		run.cols = nil
		slots, release := cf.slots(len(run.tab.recs))
		defer release()
		return run.scanFrom(slots, eligible, fullText)
	}
	return run.scan(nil, eligible, fullText)
}

// nearestMatches scores the vector clause's candidates: by distance alone,
// or, with fts clauses, by BM25 over the candidates that match them.
func nearestMatches(nearest []neighbour, recs []record, withFullText bool, fullText evalFn) []match {
	var out []match
	for _, n := range nearest {
		if !withFullText {
			out = append(out, match{slot: n.slot, score: 1 / (1 + float64(n.d2))})
			continue
		}
		if ok, s := fullText(n.slot, &recs[n.slot]); ok {
			out = append(out, match{slot: n.slot, score: s})
		}
	}
	return out
}

// eligibleSlots returns the slots of the documents eligible for the
// search when that is the documents the caller can see (no metadata
// filters) and they are known as a set: every live document for an
// unrestricted caller or one whose statistics view sees them all, the
// view's visible set otherwise (kept up to date by every write, like its
// statistics). It returns nil when records must be read.
func (run *searchRun) eligibleSlots() bitset {
	if !compactSlots || run.req == nil || len(run.plan.Filters) > 0 || run.tab.liveSlots == nil {
		return nil
	}
	if run.req.Unrestricted {
		return run.tab.liveSlots
	}
	if run.view == nil {
		return nil
	}
	if run.view.visible == nil {
		return run.tab.liveSlots
	}
	return run.view.visible
}

// isLive reports whether slot holds a live document.
func (t *table) isLive(slot int32) bool {
	if !compactSlots || t.liveSlots == nil {
		return !t.recs[slot].deleted
	}
	return t.liveSlots.has(int(slot))
}

// skipIneligible enables skipping, in phrases and NEAR, the documents a
// restricted caller cannot see before their positions are read (the
// tests turn it off to compare).
var skipIneligible = true

// compactSlots enables reading table.liveSlots and table.ids instead of
// records, and recycling match lists (the tests turn it off to compare).
var compactSlots = true

// scanFrom is scan of the given slots, which may be none (scan of nil
// slots is every slot).
func (run *searchRun) scanFrom(slots []int32, eligible eligibility, fullText evalFn) ([]match, error) {
	if len(slots) == 0 {
		return nil, run.checkCtx()
	}
	return run.scan(slots, eligible, fullText)
}

// scan evaluates the given slots (every slot of the table when slots is
// nil) and returns the eligible documents matching the fts clauses,
// checking the context as it goes.
func (run *searchRun) scan(slots []int32, eligible eligibility, fullText evalFn) ([]match, error) {
	recs := run.tab.recs
	n := len(recs)
	if slots != nil {
		n = len(slots)
	}
	// eligible.ok spelt out: this loop runs once per document.
	visible, filters := eligible.visible, eligible.filters
	// When eligibility is visibility alone and known as a set of slots,
	// records are not read (fullText reads only the fts results unless a
	// metadata clause is mixed in).
	elig := run.eligibleSlots()
	cols := run.cols
	out := getMatches()
	for i := 0; i < n; i++ {
		if i%checkEvery == 0 {
			if err := run.checkCtx(); err != nil {
				return nil, err
			}
		}
		slot := int32(i)
		if slots != nil {
			slot = slots[i]
		}
		if cols != nil && !cols.ok(slot) {
			continue
		}
		r := &recs[slot]
		if elig != nil {
			if !elig.has(int(slot)) {
				continue
			}
		} else {
			if r.deleted || !visible(r) {
				continue
			}
			if ok, _ := filters(slot, r); !ok {
				continue
			}
		}
		if ok, s := fullText(slot, r); ok {
			out = append(out, match{slot: slot, score: s})
		}
	}
	return out, run.checkCtx()
}

// page sorts the matches, cuts the requested page and builds its hits.
func (run *searchRun) page(matches []match) (engine.Result, error) {
	return run.pageTotal(matches, len(matches))
}

// pageTotal is page of the given matches out of total (the page's matches
// are among them).
func (run *searchRun) pageTotal(matches []match, total int) (engine.Result, error) {
	q, plan, recs := run.q, run.plan, run.tab.recs
	scored := plan.Vector != nil || len(plan.FullText) > 0
	res := engine.Result{Total: int64(total)}
	page := pageOf(matches, q.Offset, q.Limit, run.comparator(q.EffectiveSort(), scored))
	if len(page) == 0 {
		return res, nil
	}
	res.Hits = make([]engine.Hit, len(page))
	for i, m := range page {
		r := &recs[m.slot]
		h := engine.Hit{ID: r.id, Fields: selectFields(r, q.Select)}
		if scored {
			s := m.score
			h.Score = &s
		}
		res.Hits[i] = h
	}
	if q.WantsHighlights() && len(plan.FullText) > 0 {
		if err := run.highlight(res.Hits); err != nil {
			return engine.Result{}, err
		}
	}
	return res, nil
}

// pageOf returns the matches from offset, at most limit of them (the
// default limit when limit is 0), in cmp's order.
func pageOf(matches []match, offset, limit int, cmp func(a, b match) int) []match {
	if limit <= 0 {
		limit = dsl.DefaultLimit
	}
	top := topN(matches, offset+limit, cmp)
	if offset >= len(top) {
		return nil
	}
	return top[offset:]
}

// stats returns the search's statistics view (statsView), made on first
// use.
func (run *searchRun) stats() (*statsView, error) {
	if run.view == nil {
		v, err := newStatsView(run)
		if err != nil {
			return nil, err
		}
		run.view = v
	}
	return run.view, nil
}

// statsView is what a search's BM25 statistics and prefix expansions are
// computed over: the live documents the caller can see. N is the number of
// those with content, the average field length their total tokens over N,
// a term's document frequency the number of them containing it; a prefix
// expands to the words they contain. So neither a score nor a refused
// prefix depends on documents the caller cannot see (docs/design.md §6).
// For a caller who sees every live document (unrestricted, or in every
// group that holds one) it is the whole table's, at no extra cost. For an
// index whose records lack lengths (format 1) the average is unknown and
// scores are not length-normalised.
type statsView struct {
	run *searchRun
	*viewStats
}

// newStatsView returns run's view, reusing the statistics of an earlier
// search by a caller of the same visibility: cached views are updated by
// every write (statsCache.update), so computing one, which walks every
// record, happens once per group set (and again only when it falls out of
// the cache or a write cannot update it).
func newStatsView(run *searchRun) (*statsView, error) {
	t := run.tab
	if run.req.Unrestricted {
		return &statsView{run: run, viewStats: t.wholeStats()}, nil
	}
	key := visibilityKey(run.req)
	if s, ok := t.stats.get(key, t.gen); ok {
		return &statsView{run: run, viewStats: s}, nil
	}
	s, err := computeViewStats(run)
	if err != nil {
		return nil, err
	}
	t.stats.put(key, t.gen, visibility(run.req), s)
	return &statsView{run: run, viewStats: s}, nil
}

// wholeStats returns the statistics of every live document.
func (t *table) wholeStats() *viewStats {
	return t.finishStats(&viewStats{}, t.withContent, t.sumLens)
}

// computeViewStats walks the table for the statistics of the documents
// run's caller can see.
func computeViewStats(run *searchRun) (*viewStats, error) {
	t := run.tab
	visible := visibility(run.req)
	s := &viewStats{visible: newBitset(len(t.recs))}
	for i := range t.recs {
		if i%checkEvery == 0 {
			if err := run.checkCtx(); err != nil {
				return nil, err
			}
		}
		r := &t.recs[i]
		if r.deleted || !visible(r) {
			continue
		}
		s.visible.set(i)
		s.count(r, 1)
	}
	if !t.finishView(s) {
		return t.wholeStats(), nil
	}
	return s, nil
}

// finishView sets the N and average lengths of s, a view with a visible
// set, from its counts (computeViewStats and statsCache.update share it,
// so an updated view equals a fresh one to the bit). It returns false
// when s sees every live document: the whole table's statistics
// (wholeStats) are then the view's.
func (t *table) finishView(s *viewStats) bool {
	if s.live == t.live {
		return false
	}
	if t.noLens > 0 {
		s.docs, s.avgLen = float64(s.live), nil
		return true
	}
	t.finishStats(s, s.withContent, s.lens)
	return true
}

// finishStats sets s's N and average lengths from the documents with
// content and their total lengths; with records lacking lengths, N is
// the live documents and lengths are unknown.
func (t *table) finishStats(s *viewStats, withContent int, lens [numLenFields]int64) *viewStats {
	if t.noLens > 0 {
		s.docs = float64(t.live)
		return s
	}
	s.docs = float64(max(withContent, 1))
	if s.avgLen == nil {
		s.avgLen = make(map[string]float64, numLenFields)
	}
	s.avgLen[fieldStem] = float64(lens[lenStem]) / s.docs
	s.avgLen[fieldExact] = float64(lens[lenExact]) / s.docs
	s.avgLen[fieldGrams] = float64(lens[lenGrams]) / s.docs
	return s
}

func (v *statsView) field(name string) fieldStats {
	return fieldStats{docs: v.docs, avgLen: v.avgLen[name]}
}

// docFreq counts the visible documents containing term in field by
// reading the term's postings (once per term and caller visibility: the
// count is kept with the view, and writes keep it up to date).
func (v *statsView) docFreq(field, term string, all uint64) (uint64, error) {
	if v.visible == nil {
		return all, nil
	}
	key := posTerm{field: field, term: term}
	if n, ok := v.freq(key); ok {
		return n, nil
	}
	var n uint64
	err := v.postings(field, term, func(int32) bool {
		n++
		return true
	})
	if err != nil {
		return 0, err
	}
	// Kept only when the index the count was read from holds no write
	// the table has not taken yet (Engine.unput): the writes that update
	// the count count from the table's state.
	if v.run.e.unput.Load() == 0 && v.setFreq(key, n) {
		v.run.tab.stats.saw(key)
	}
	return n, nil
}

// holds reports whether a visible document contains term in field.
func (v *statsView) holds(field, term string) (bool, error) {
	if v.visible == nil {
		return true, nil
	}
	found := false
	err := v.postings(field, term, func(int32) bool {
		found = true
		return false
	})
	return found, err
}

// postings calls fn with the slot of each visible document containing
// term in field, until fn returns false.
func (v *statsView) postings(field, term string, fn func(slot int32) bool) error {
	run := v.run
	tfr, err := run.r.TermFieldReader(run.ctx, []byte(term), field, false, false, false)
	if err != nil {
		return err
	}
	defer tfr.Close()
	var tfd index.TermFieldDoc
	for n := 0; ; n++ {
		if n%checkEvery == 0 {
			if err := run.checkCtx(); err != nil {
				return err
			}
		}
		d, err := tfr.Next(tfd.Reset())
		if err != nil || d == nil {
			return err
		}
		slot, ok, err := run.res.slot(d.ID)
		if err != nil {
			return err
		}
		if ok && v.visible.has(int(slot)) && !fn(slot) {
			return nil
		}
	}
}

// driver returns the result of the full-text conjunct that is an fts
// clause with the fewest matches, or nil when no conjunct is an fts clause.
func driver(conjuncts []dsl.Clause, leaves map[*dsl.FTS]*ftsLeaf) *ftsLeaf {
	var d *ftsLeaf
	for _, c := range conjuncts {
		if f, ok := c.(*dsl.FTS); ok {
			if l := leaves[f]; d == nil || len(l.slots) < len(d.slots) {
				d = l
			}
		}
	}
	return d
}

// fts runs one fts clause, restricted to the documents whose ids are
// listed when restrict is not nil.
//
// When the clause is the whole search (run.top), topCollector counts its
// matches and keeps the page; the leaf returned is then empty, without
// the score array of one float64 per document the other paths fill (8 MB
// at 1 M documents, allocated and set to NaN when the pool has none:
// issue 23, the largest allocation of a text search at scale).
func (run *searchRun) fts(f *dsl.FTS, restrict []string) (*ftsLeaf, error) {
	qn := run.e.an.translate(f.Root)
	run.nodes[f] = qn
	if qn == nil || restrict != nil && len(restrict) == 0 {
		return &ftsLeaf{}, nil
	}
	whole := run.top != nil && run.top.f == f && restrict == nil
	var leaf *ftsLeaf
	if whole && leafOnDemand {
		leaf = &ftsLeaf{}
	} else {
		leaf = newLeaf(len(run.tab.recs))
	}
	ctx := run.ctx
	view, err := run.stats()
	if err != nil {
		return nil, err
	}
	b := &searcherBuilder{
		ctx: ctx, r: run.r, an: run.e.an, grams: run.e.features.grams, pairs: run.e.features.pairs, stats: view,
		maxPrefixTerms: run.e.opts.MaxPrefixTerms, prefixTerms: &run.prefixTerms, freqs: &run.e.freqs,
	}
	if run.e.features.window {
		b.window = run.e.common.Load()
	}
	if skipIneligible && !run.req.Unrestricted && view.visible != nil {
		if elig := run.eligibleSlots(); elig != nil {
			// A caller who sees only some documents: those it cannot see
			// are never results (scan tests eligibility before the fts
			// clauses), so phrases and NEAR need not read their
			// positions. Only documents whose slot the cache knows are
			// skipped; the others are checked and dropped later, as
			// before. (A caller who sees every live document has nothing
			// to skip: deleted ones are not in the postings read.)
			res := run.res
			b.ineligible = func(num uint64) bool {
				slot, ok := res.cachedSlot(num)
				return ok && !elig.has(int(slot))
			}
		}
	}
	// add records a match of the fts clause: a document written to the
	// index but not yet to the table has no slot yet and is skipped.
	add := func(slot int32, ok bool, score float64) {
		if ok && run.tab.isLive(slot) && math.IsNaN(leaf.scores[slot]) {
			leaf.scores[slot] = score
			leaf.slots = append(leaf.slots, slot)
		}
	}
	if snap, ok := run.r.(*scorch.IndexSnapshot); ok && restrict == nil && lonePrefix(qn) {
		if whole {
			return leaf, run.top.collectPrefix(run, b, qn, snap)
		}
		err := b.eachPrefixMatch(qn, snap, run.res, func(slot int32, ok bool) error {
			add(slot, ok, 1)
			return nil
		})
		if err != nil {
			return nil, err
		}
		return leaf, run.checkCtx()
	}
	s, err := b.build(qn, scoring)
	if err != nil {
		return nil, err
	}
	if restrict != nil {
		ids, err := searcher.NewDocIDSearcher(ctx, run.r, restrict, 1, noScoring)
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		conj, err := searcher.NewConjunctionSearcher(ctx, run.r,
			[]search.Searcher{s, &constScoreSearcher{Searcher: ids}}, scoring)
		if err != nil {
			_ = s.Close()
			_ = ids.Close()
			return nil, err
		}
		s = conj
	}
	defer s.Close()
	if whole {
		// The whole search: its page straight from the matches.
		if ps, ok := s.(*segPosSearcher); ok {
			return leaf, run.top.collect(run, ps)
		}
		return leaf, run.top.collectSearcher(run, s)
	}
	if ps, ok := s.(*segPosSearcher); ok {
		// A phrase or NEAR alone: its matches straight from the
		// segments (it shares the snapshot, so the resolver's segments
		// are its own).
		err := ps.eachMatch(func(seg int, local, num uint64, score float64) error {
			slot, ok, err := run.res.slotAt(seg, local, num)
			add(slot, ok, score)
			return err
		})
		if err != nil {
			return nil, err
		}
		return leaf, run.checkCtx()
	}
	if err := run.eachMatch(s, add); err != nil {
		return nil, err
	}
	return leaf, nil
}

// eachMatch calls f with the table slot (ok false: not in the table yet)
// and score of each match of searcher s, checking the search's context
// every checkEvery matches.
func (run *searchRun) eachMatch(s search.Searcher, f func(slot int32, ok bool, score float64)) error {
	sctx := &search.SearchContext{
		DocumentMatchPool: search.NewDocumentMatchPool(s.DocumentMatchPoolSize(), 0),
		IndexReader:       run.r,
	}
	for n := 0; ; n++ {
		if n%checkEvery == 0 {
			if err := run.checkCtx(); err != nil {
				return err
			}
		}
		dm, err := s.Next(sctx)
		if err != nil {
			return err
		}
		if dm == nil {
			return nil
		}
		slot, ok, err := run.res.slot(dm.IndexInternalID)
		if err != nil {
			return err
		}
		f(slot, ok, dm.Score)
		sctx.DocumentMatchPool.Put(dm)
	}
}

// visibility returns the caller's visibility pre-filter: unrestricted
// callers see every document, others the documents sharing a group.
func visibility(req *engine.Request) func(r *record) bool {
	if req.Unrestricted {
		return func(*record) bool { return true }
	}
	groups := engine.SortedIDs(req.GroupIDs)
	if len(groups) == 0 {
		return func(*record) bool { return false }
	}
	return func(r *record) bool {
		// Both sorted: merge.
		i, j := 0, 0
		for i < len(r.groups) && j < len(groups) {
			switch {
			case r.groups[i] == groups[j]:
				return true
			case r.groups[i] < groups[j]:
				i++
			default:
				j++
			}
		}
		return false
	}
}

// comparator is comparator over the search's table: its compact ids and
// metadata columns when they are enabled (pageTotal, topCollector).
func (run *searchRun) comparator(keys []dsl.Sort, scored bool) func(a, b match) int {
	var ids []int64
	if compactSlots {
		ids = run.tab.ids
	}
	var cols *metaColumns
	if columnFilters {
		cols = &run.tab.cols
	}
	return comparator(keys, run.tab.recs, ids, cols, scored)
}

// comparator orders matches by the sort keys; documents lacking a field
// sort after those having it in both directions. Without a ranking (scored
// false) _score keys are ignored: every score is null.
//
// ids, when not nil, holds the id of each slot (table.ids), read instead
// of the records; cols, when not nil, the time fields' keys, which decide
// between two records unless equal.
func comparator(keys []dsl.Sort, recs []record, ids []int64, cols *metaColumns, scored bool) func(a, b match) int {
	var cmps []func(a, b match) int
	for _, k := range keys {
		desc := k.Desc
		dir := func(c int) int {
			if desc {
				return -c
			}
			return c
		}
		switch k.Field {
		case dsl.FieldScore:
			if scored {
				cmps = append(cmps, func(a, b match) int { return dir(cmp.Compare(a.score, b.score)) })
			}
		case dsl.FieldID:
			if ids != nil {
				cmps = append(cmps, func(a, b match) int { return dir(cmp.Compare(ids[a.slot], ids[b.slot])) })
			} else {
				cmps = append(cmps, func(a, b match) int { return dir(cmp.Compare(recs[a.slot].id, recs[b.slot].id)) })
			}
		default:
			if i, ok := stringFields[k.Field]; ok {
				cmps = append(cmps, func(a, b match) int {
					ra, rb := &recs[a.slot], &recs[b.slot]
					ha, hb := ra.has(i), rb.has(i)
					if ha != hb {
						return missingLast(ha)
					}
					if !ha {
						return 0
					}
					return dir(strings.Compare(ra.str[i], rb.str[i]))
				})
			} else if get, ok := timeGetter(k.Field); ok {
				var byKey func(a, b match) int
				if cols != nil {
					byKey = cols.timeSort(timeFields[k.Field], desc)
				}
				cmps = append(cmps, func(a, b match) int {
					if byKey != nil {
						if c := byKey(a, b); c != 0 {
							return c
						}
					}
					ta, ha := get(&recs[a.slot])
					tb, hb := get(&recs[b.slot])
					if ha != hb {
						return missingLast(ha)
					}
					if !ha {
						return 0
					}
					return dir(ta.Compare(tb))
				})
			} else if get, ok := boolGetter(k.Field); ok {
				cmps = append(cmps, func(a, b match) int {
					return dir(cmpBool(get(&recs[a.slot]), get(&recs[b.slot])))
				})
			}
			// filesbelongto cannot be a sort key (dsl rejects it).
		}
	}
	return func(a, b match) int {
		for _, c := range cmps {
			if r := c(a, b); r != 0 {
				return r
			}
		}
		return 0
	}
}

func missingLast(aHas bool) int {
	if aHas {
		return -1
	}
	return 1
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// topN returns the first n matches in cmp order, sorted, most matches
// costing one comparison (matchHeap).
func topN(ms []match, n int, cmp func(a, b match) int) []match {
	if n >= len(ms) {
		slices.SortFunc(ms, cmp)
		return ms
	}
	mh := matchHeap{h: make([]match, 0, n), n: n, cmp: cmp}
	for _, m := range ms {
		if !mh.full() {
			mh.push(m)
		} else if cmp(m, mh.h[0]) < 0 {
			mh.replaceTop(m)
		}
	}
	return mh.sorted()
}

// matchHeap keeps the first n matches in cmp order of those offered: a
// heap with the last of them on top (topN, topCollector).
type matchHeap struct {
	h   []match
	n   int
	cmp func(a, b match) int
}

// full reports whether the heap holds n matches.
func (mh *matchHeap) full() bool { return len(mh.h) >= mh.n }

// push adds m to a heap that is not full.
func (mh *matchHeap) push(m match) {
	h, cmp := append(mh.h, m), mh.cmp
	for j := len(h) - 1; j > 0; {
		p := (j - 1) / 2
		if cmp(h[j], h[p]) <= 0 {
			break
		}
		h[j], h[p] = h[p], h[j]
		j = p
	}
	mh.h = h
}

// replaceTop puts m in place of the last kept match (h[0]).
func (mh *matchHeap) replaceTop(m match) {
	h, cmp := mh.h, mh.cmp
	h[0] = m
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		w := l
		if r := l + 1; r < len(h) && cmp(h[r], h[l]) > 0 {
			w = r
		}
		if cmp(h[w], h[i]) <= 0 {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// sorted returns the kept matches in cmp order.
func (mh *matchHeap) sorted() []match {
	slices.SortFunc(mh.h, mh.cmp)
	return mh.h
}

// selectFields returns the selected metadata fields of r (nil when none is
// selected).
func selectFields(r *record, sel []string) map[string]any {
	var out map[string]any
	for _, name := range sel {
		var v any
		switch name {
		case dsl.FieldID, dsl.FieldScore, dsl.FieldHighlights:
			continue
		case "date":
			if r.hasDate {
				v = r.date
			}
		case "entry_date":
			if r.hasEntryDate {
				v = r.entryDate
			}
		case "privileged":
			v = r.privileged
		case "islocked":
			v = r.locked
		case "filesbelongto":
			if len(r.folders) > 0 {
				v = slices.Clone(r.folders)
			}
		default:
			i, ok := stringFields[name]
			if !ok {
				continue
			}
			if r.has(i) {
				v = r.str[i]
			}
		}
		if out == nil {
			out = make(map[string]any, len(sel))
		}
		out[name] = v
	}
	return out
}

// DocFreqs implements engine.DocFreqs over the stemmed content field and
// the statistics BM25 uses (statsView: the live documents req's caller
// can see).
func (e *Engine) DocFreqs(ctx context.Context, req engine.Request, words []string) ([]int64, int64, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, 0, engine.ErrClosed
	}
	adv, err := e.idx.Advanced()
	if err != nil {
		return nil, 0, fmt.Errorf("bleveengine: doc freqs: %w", err)
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, 0, fmt.Errorf("bleveengine: doc freqs: %w", err)
	}
	defer r.Close()
	run := &searchRun{e: e, ctx: ctx, r: r, tab: e.tab, req: &req, res: e.slots.resolver(r, e.tab)}
	v, err := run.stats()
	if err != nil {
		return nil, 0, fmt.Errorf("bleveengine: doc freqs: %w", err)
	}
	freqs := make([]int64, len(words))
	for i, w := range words {
		toks := analyze(e.an.stem, w)
		if len(toks) == 0 {
			continue
		}
		term := toks[0].term
		tfr, err := r.TermFieldReader(ctx, []byte(term), fieldStem, false, false, false)
		if err != nil {
			return nil, 0, fmt.Errorf("bleveengine: doc freqs: %w", err)
		}
		all := tfr.Count()
		tfr.Close()
		n, err := v.docFreq(fieldStem, term, all)
		if err != nil {
			return nil, 0, fmt.Errorf("bleveengine: doc freqs: %w", err)
		}
		freqs[i] = int64(n)
	}
	return freqs, int64(v.docs), nil
}
