package bleveengine

import (
	"context"
	"math"
	"slices"
	"sort"

	"github.com/blevesearch/bleve/v2/search"
	index "github.com/blevesearch/bleve_index_api"
)

// positions maps a term to its sorted token positions in one document.
type positions map[string][]int

// phraseStarts appends to dst the sorted positions at which the phrase
// terms occur consecutively ("" matches any token).
func phraseStarts(terms []string, pos positions, dst []int) []int {
	first := pos[terms[0]]
outer:
	for _, p := range first {
		for i := 1; i < len(terms); i++ {
			if terms[i] == "" {
				continue
			}
			if !hasPos(pos[terms[i]], p+i) {
				continue outer
			}
		}
		dst = append(dst, p)
	}
	return dst
}

// phraseStartsIdx is phraseStarts with terms given by index into pos (-1
// for a gap).
func phraseStartsIdx(terms []int, pos [][]int, dst []int) []int {
	first := pos[terms[0]]
outer:
	for _, p := range first {
		for i := 1; i < len(terms); i++ {
			if terms[i] >= 0 && !hasPos(pos[terms[i]], p+i) {
				continue outer
			}
		}
		dst = append(dst, p)
	}
	return dst
}

func hasPos(list []int, p int) bool {
	j := sort.SearchInts(list, p)
	return j < len(list) && list[j] == p
}

// nearWindows looks for windows holding one occurrence of every clause,
// clause i occurring at the positions starts[i] (sorted) and spanning
// lens[i] tokens, with at most slop other tokens between the first and the
// last: maxEnd - minStart - sum(lens) <= slop, Lucene's unordered span_near
// rule (which also lets occurrences overlap). It sweeps like Lucene's
// NearSpansUnordered: take every clause's next occurrence and advance the
// one that starts first. For each window found it calls fn with the chosen
// index into each starts list; it stops when fn returns false (or is nil)
// and reports whether any window was found.
func nearWindows(starts [][]int, lens []int, slop int, fn func(choice []int) bool) bool {
	return nearWindowsIn(nil, starts, lens, slop, fn)
}

// nearWindowsIn is nearWindows with scratch space for the choice (used
// when it has room for one index per clause).
func nearWindowsIn(scratch []int, starts [][]int, lens []int, slop int, fn func(choice []int) bool) bool {
	total := 0
	for i, s := range starts {
		if len(s) == 0 {
			return false
		}
		total += lens[i]
	}
	if len(starts) == 1 {
		// One clause (a phrase): every occurrence is a match.
		if fn != nil {
			choice := []int{0}
			for choice[0] = range starts[0] {
				if !fn(choice) {
					break
				}
			}
		}
		return true
	}
	var choice []int
	if cap(scratch) >= len(starts) {
		choice = scratch[:len(starts)]
		clear(choice)
	} else {
		choice = make([]int, len(starts))
	}
	found := false
	for {
		minI, minStart, maxEnd := 0, starts[0][choice[0]], 0
		for i, s := range starts {
			st := s[choice[i]]
			if st < minStart {
				minI, minStart = i, st
			}
			if end := st + lens[i]; end > maxEnd {
				maxEnd = end
			}
		}
		if maxEnd-minStart-total <= slop {
			found = true
			if fn == nil || !fn(choice) {
				return true
			}
		}
		choice[minI]++
		if choice[minI] == len(starts[minI]) {
			return found
		}
	}
}

// posSearcher matches the documents where every clause (a phrase: terms
// by position, possibly of different fields sharing positions, such as
// exact tokens and common grams) occurs and, for more than one clause, the clauses lie within
// slop of each other (nearWindows). It reads the postings of each distinct
// term with positions straight from the index (a leapfrog conjunction over
// the term readers), so counts and paging are exact, and scores a match
// with the sum of its terms' BM25 scores.
type posSearcher struct {
	r       index.IndexReader
	tfrs    []index.TermFieldReader
	scorers []bm25
	scored  bool
	cur     []*index.TermFieldDoc // current posting per term, nil before the first
	bufs    []*index.TermFieldDoc
	clauses [][]int // term indexes per clause position, -1 for a gap
	lens    []int
	slop    int
	pos     [][]int
	starts  [][]int
	started bool
	done    bool
}

func newPosSearcher(ctx context.Context, r index.IndexReader, clauses [][]posTerm, slop int, stats collectionStats, opts search.SearcherOptions) (search.Searcher, error) {
	var terms []posTerm
	idx := map[posTerm]int{}
	s := &posSearcher{r: r, slop: slop}
	for _, c := range clauses {
		ci := make([]int, len(c))
		for j, t := range c {
			if t.term == "" {
				ci[j] = -1
				continue
			}
			i, ok := idx[t]
			if !ok {
				i = len(terms)
				idx[t] = i
				terms = append(terms, t)
			}
			ci[j] = i
		}
		s.clauses = append(s.clauses, ci)
		s.lens = append(s.lens, len(c))
	}
	s.scored = opts.Score != "none"
	for _, t := range terms {
		tfr, err := r.TermFieldReader(ctx, []byte(t.term), t.field, true, true, true)
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		s.tfrs = append(s.tfrs, tfr)
		var scorer bm25
		if s.scored {
			n, err := stats.docFreq(t.field, t.term, tfr.Count())
			if err != nil {
				_ = s.Close()
				return nil, err
			}
			scorer = newBM25(stats.field(t.field), n)
		}
		s.scorers = append(s.scorers, scorer)
	}
	n := len(terms)
	s.cur = make([]*index.TermFieldDoc, n)
	s.bufs = make([]*index.TermFieldDoc, n)
	for i := range s.bufs {
		s.bufs[i] = &index.TermFieldDoc{}
	}
	s.pos = make([][]int, n)
	s.starts = make([][]int, len(clauses))
	return s, nil
}

// advance moves reader i to the first posting at or after id (nil: next).
func (s *posSearcher) advance(i int, id index.IndexInternalID) error {
	var err error
	if id == nil {
		s.cur[i], err = s.tfrs[i].Next(s.bufs[i].Reset())
	} else {
		s.cur[i], err = s.tfrs[i].Advance(id, s.bufs[i].Reset())
	}
	if err != nil {
		return err
	}
	if s.cur[i] == nil {
		s.done = true
	}
	return nil
}

// align advances the readers until they all stand on the same document
// (leapfrog); it returns false at the end of any of them.
func (s *posSearcher) align() (bool, error) {
	for !s.done {
		maxI := 0
		for i := 1; i < len(s.cur); i++ {
			if s.cur[i].ID.Compare(s.cur[maxI].ID) > 0 {
				maxI = i
			}
		}
		target := s.cur[maxI].ID
		aligned := true
		for i := range s.cur {
			if i == maxI || s.cur[i].ID.Equals(target) {
				continue
			}
			aligned = false
			// target aliases reader maxI's buffer, which advance(i)
			// does not touch.
			if err := s.advance(i, target); err != nil {
				return false, err
			}
			if s.done {
				return false, nil
			}
			if s.cur[i].ID.Compare(target) > 0 {
				break // new maximum: start over
			}
		}
		if aligned {
			return true, nil
		}
	}
	return false, nil
}

// matches checks the position constraints on the current document.
func (s *posSearcher) matches() bool {
	for i, tfd := range s.cur {
		p := s.pos[i][:0]
		for _, v := range tfd.Vectors {
			p = append(p, int(v.Pos))
		}
		if !slices.IsSorted(p) {
			slices.Sort(p)
		}
		s.pos[i] = p
	}
	for i, c := range s.clauses {
		s.starts[i] = phraseStartsIdx(c, s.pos, s.starts[i][:0])
		if len(s.starts[i]) == 0 {
			return false
		}
	}
	return nearWindows(s.starts, s.lens, s.slop, nil)
}

// next finds the next match at or after the readers' positions.
func (s *posSearcher) next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	for !s.done {
		ok, err := s.align()
		if err != nil || !ok {
			return nil, err
		}
		if s.matches() {
			dm := ctx.DocumentMatchPool.Get()
			dm.Score = 0
			dm.IndexInternalID = append(dm.IndexInternalID[:0], s.cur[0].ID...)
			if s.scored {
				for i, tfd := range s.cur {
					dm.Score += s.scorers[i].score(tfd.Freq, tfd.Norm)
				}
			}
			// Step past this document for the next call.
			if err := s.advance(0, nil); err != nil {
				return nil, err
			}
			return dm, nil
		}
		if err := s.advance(0, nil); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func (s *posSearcher) start() error {
	s.started = true
	for i := range s.tfrs {
		if err := s.advance(i, nil); err != nil || s.done {
			return err
		}
	}
	return nil
}

func (s *posSearcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	if !s.started {
		if err := s.start(); err != nil {
			return nil, err
		}
	}
	return s.next(ctx)
}

func (s *posSearcher) Advance(ctx *search.SearchContext, id index.IndexInternalID) (*search.DocumentMatch, error) {
	if !s.started {
		if err := s.start(); err != nil {
			return nil, err
		}
	}
	for i := range s.cur {
		if s.done {
			return nil, nil
		}
		if s.cur[i].ID.Compare(id) < 0 {
			if err := s.advance(i, id); err != nil {
				return nil, err
			}
		}
	}
	return s.next(ctx)
}

func (s *posSearcher) Close() error {
	var first error
	for _, r := range s.tfrs {
		if err := r.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (s *posSearcher) Weight() float64      { return 0 }
func (s *posSearcher) SetQueryNorm(float64) {}

func (s *posSearcher) Count() uint64 {
	var c uint64 = math.MaxUint64
	for _, r := range s.tfrs {
		c = min(c, r.Count())
	}
	if len(s.tfrs) == 0 {
		return 0
	}
	return c
}

func (s *posSearcher) Min() int                   { return 0 }
func (s *posSearcher) Size() int                  { return 256 * (1 + len(s.tfrs)) }
func (s *posSearcher) DocumentMatchPoolSize() int { return 2 }
