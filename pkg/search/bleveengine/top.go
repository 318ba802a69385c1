package bleveengine

import (
	"math"
	"sync"

	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search"

	"github.com/docrepo/docrepo/pkg/search/dsl"
)

// directTop enables topCollector (the tests and BenchmarkTextCost turn it
// off to compare).
var directTop = true

// topCollector answers a search whose where clause is one fts clause
// alone, without metadata filters or vector clause: its matches are counted
// and only the best offset+limit of them kept, instead of every match being
// written to the clause's leaf, scanned again into a match list and cut by
// topN (a NEAR of two common words, or a three-letter prefix, matches a
// large part of the index). The total, the page and its scores are those
// of the general path: the same matches (a slot of the table, live, not
// seen before, eligible), the same comparator. Phrases and NEAR come from
// their segPosSearcher (collect), every other clause from its bleve
// searcher (collectSearcher).
//
// When the results are sorted by score first (the default), the searcher
// is told the score a match must reach to be kept (segPosSearcher.
// minScore, the worst kept once offset+limit are): the window-decided
// documents of a block whose score bound is below it are counted without
// reading their terms' frequencies and norms.
type topCollector struct {
	f       *dsl.FTS
	heap    matchHeap // the best offset+limit so far
	byScore bool
	total   int
	used    bool
	// ids, when the sort is _score descending then id (the default),
	// holds the id of each slot (table.ids): offer then compares a match
	// with the last kept one itself, instead of through heap.cmp's chain
	// of key functions (a prefix's matches all score 1, so every one
	// after the first page is decided by its id). idDesc: id descending.
	ids    []int64
	idDesc bool
	// seen is the admitter's set of the slots counted, back to seenPool
	// when the collection is done.
	seen bitset
	// skipped counts the matches not scored (tests, benchmarks).
	skipped int
}

// directClause returns the search's fts clause when it is the whole
// where clause and the search has no metadata filter or vector clause,
// nil otherwise.
func (run *searchRun) directClause() *dsl.FTS {
	plan := run.plan
	if !directTop || plan.Vector != nil || len(plan.Filters) > 0 || len(plan.FullText) != 1 {
		return nil
	}
	f, _ := plan.FullText[0].(*dsl.FTS)
	return f
}

// newTopCollector returns the collector of the search's page for clause f.
func (run *searchRun) newTopCollector(f *dsl.FTS) *topCollector {
	q := run.q
	limit := q.Limit
	if limit <= 0 {
		limit = dsl.DefaultLimit
	}
	keys := q.EffectiveSort()
	t := &topCollector{
		f:       f,
		heap:    matchHeap{n: q.Offset + limit, cmp: run.comparator(keys, true)},
		byScore: keys[0].Field == dsl.FieldScore && keys[0].Desc,
	}
	if topIDOrder && compactSlots && t.byScore && len(keys) == 2 && keys[1].Field == dsl.FieldID && len(run.tab.ids) == len(run.tab.recs) {
		t.ids, t.idDesc = run.tab.ids, keys[1].Desc
	}
	return t
}

// topIDOrder lets topCollector compare matches by score and id itself
// when that is the sort (topCollector.ids); the tests and benchmarks turn
// it off to compare.
var topIDOrder = true

// collect counts and keeps the matches of ps, the searcher of the clause.
func (t *topCollector) collect(run *searchRun, ps *segPosSearcher) error {
	t.used = true
	admit := t.admitter(run)
	err := ps.eachMatch(func(seg int, local, num uint64, score float64) error {
		slot, ok, err := run.res.slotAt(seg, local, num)
		if err != nil {
			return err
		}
		if admit(slot, ok, score) && t.byScore && t.heap.full() {
			ps.minScore = t.heap.h[0].score
		}
		return nil
	})
	return t.done(run, err)
}

// admitter returns the function that counts one match of the clause (its
// slot, ok false when it has none yet) and offers it unless its score is
// NaN (not scored: below the kept); it reports whether it was offered. A
// match counts once, when it is a live slot the caller may see, as in the
// general path's leaf and scan.
func (t *topCollector) admitter(run *searchRun) func(slot int32, ok bool, score float64) bool {
	tab := run.tab
	recs := tab.recs
	elig := run.eligibleSlots()
	visible := visibility(run.req)
	seen := getSeen(len(recs))
	t.seen = seen
	return func(slot int32, ok bool, score float64) bool {
		if !ok || !tab.isLive(slot) || seen.has(int(slot)) {
			return false
		}
		seen.set(int(slot))
		if elig != nil {
			if !elig.has(int(slot)) {
				return false
			}
		} else if r := &recs[slot]; r.deleted || !visible(r) {
			return false
		}
		t.total++
		if math.IsNaN(score) {
			t.skipped++
			return false
		}
		t.offer(match{slot: slot, score: score})
		return true
	}
}

// collectSearcher counts and keeps the matches of s, the clause's bleve
// searcher (a prefix, a term, AND or OR of words: any fts clause alone but
// a phrase or NEAR), instead of writing every match to the clause's leaf
// and scanning it again: a three-letter prefix at 1 M documents matches
// hundreds of thousands, all of score 1 (issue 23: prefix's 8-client p99).
func (t *topCollector) collectSearcher(run *searchRun, s search.Searcher) error {
	t.used = true
	admit := t.admitter(run)
	return t.done(run, run.eachMatch(s, func(slot int32, ok bool, score float64) { admit(slot, ok, score) }))
}

// collectPrefix counts and keeps the matches of q, a prefix alone, read
// segment by segment (eachPrefixMatch), every one of score 1.
func (t *topCollector) collectPrefix(run *searchRun, b *searcherBuilder, q *qnode, snap *scorch.IndexSnapshot) error {
	t.used = true
	admit := t.admitter(run)
	err := b.eachPrefixMatch(q, snap, run.res, func(slot int32, ok bool) error {
		admit(slot, ok, 1)
		return nil
	})
	return t.done(run, err)
}

// done ends a collection that returned err: it reports the totals to
// topObserved and checks the search's context.
func (t *topCollector) done(run *searchRun, err error) error {
	if t.seen != nil {
		putSeen(t.seen)
		t.seen = nil
	}
	if err != nil {
		return err
	}
	if topObserved != nil {
		topObserved(t.total, t.skipped)
	}
	return run.checkCtx()
}

// seenPool recycles the admitters' sets of the slots they counted (one bit
// per document: 125 KB at 1 M documents, allocated and zeroed by every
// search topCollector answered, the largest allocation of a NEAR or an OR
// of words there once nothing was allocated per match).
var seenPool sync.Pool

// getSeen returns an empty set for n slots, recycled when the pool has
// one large enough.
func getSeen(n int) bitset {
	words := (n + 63) / 64
	if p, ok := seenPool.Get().(*bitset); ok && cap(*p) >= words {
		b := (*p)[:words]
		clear(b)
		return b
	}
	return newBitset(n)
}

// putSeen returns b to seenPool.
func putSeen(b bitset) {
	seenPool.Put(&b)
}

// topObserved, when set (tests, benchmarks), is called by every
// topCollector with its total and how many matches were not scored.
var topObserved func(total, skipped int)

// offer keeps m when it is among the best n so far.
func (t *topCollector) offer(m match) {
	mh := &t.heap
	switch {
	case mh.n <= 0:
	case !mh.full():
		mh.push(m)
	case t.ids != nil:
		// Score descending, then id: m is kept when it sorts before the
		// last kept (ids are unique, so never equal but for the same
		// document, which admitter offers once).
		last := &mh.h[0]
		if m.score < last.score {
			return
		}
		if m.score == last.score {
			a, b := t.ids[m.slot], t.ids[last.slot]
			if t.idDesc {
				a, b = b, a
			}
			if a >= b {
				return
			}
		}
		mh.replaceTop(m)
	case t.byScore && m.score < mh.h[0].score:
		// A lower score sorts after h[0] when the score comes first.
	case mh.cmp(m, mh.h[0]) < 0:
		mh.replaceTop(m)
	}
}

// matches returns the kept matches in order.
func (t *topCollector) matches() []match { return t.heap.sorted() }
