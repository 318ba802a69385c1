package bleveengine

import (
	"context"
	"slices"
	"sort"

	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/searcher"
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
			list := pos[terms[i]]
			j := sort.SearchInts(list, p+i)
			if j == len(list) || list[j] != p+i {
				continue outer
			}
		}
		dst = append(dst, p)
	}
	return dst
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
	total := 0
	for i, s := range starts {
		if len(s) == 0 {
			return false
		}
		total += lens[i]
	}
	choice := make([]int, len(starts))
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

// nearSearcher matches the documents where a NEAR node's clauses occur
// within its slop. It reads the positions of every term of the clauses
// from a conjunction of term searchers (with term vectors) and checks each
// candidate with nearWindows, so counts and paging are exact. Its score is
// the sum of its terms' scores, like bleve's phrase searcher.
type nearSearcher struct {
	conj    search.Searcher
	field   string
	clauses [][]string
	lens    []int
	slop    int
	pos     positions
	starts  [][]int
}

func newNearSearcher(ctx context.Context, r index.IndexReader, q *qnode, opts search.SearcherOptions) (search.Searcher, error) {
	var terms []string
	for _, c := range q.clauses {
		for _, t := range c {
			if t != "" && !slices.Contains(terms, t) {
				terms = append(terms, t)
			}
		}
	}
	topts := opts
	topts.IncludeTermVectors = true
	ts := make([]search.Searcher, 0, len(terms))
	for _, t := range terms {
		s, err := searcher.NewTermSearcher(ctx, r, t, q.field, 1, topts)
		if err != nil {
			closeAll(ts)
			return nil, err
		}
		ts = append(ts, s)
	}
	var conj search.Searcher
	if len(ts) == 1 {
		conj = ts[0]
	} else {
		var err error
		if conj, err = searcher.NewConjunctionSearcher(ctx, r, ts, topts); err != nil {
			closeAll(ts)
			return nil, err
		}
	}
	ns := &nearSearcher{
		conj:    conj,
		field:   q.field,
		clauses: q.clauses,
		lens:    make([]int, len(q.clauses)),
		slop:    q.slop,
		pos:     make(positions, len(terms)),
		starts:  make([][]int, len(q.clauses)),
	}
	for i, c := range q.clauses {
		ns.lens[i] = len(c)
	}
	return ns, nil
}

func (s *nearSearcher) matches(dm *search.DocumentMatch) bool {
	for k, v := range s.pos {
		s.pos[k] = v[:0]
	}
	for _, ftl := range dm.FieldTermLocations {
		if ftl.Field == s.field {
			s.pos[ftl.Term] = append(s.pos[ftl.Term], int(ftl.Location.Pos))
		}
	}
	for _, v := range s.pos {
		if !slices.IsSorted(v) {
			slices.Sort(v)
		}
	}
	for i, c := range s.clauses {
		s.starts[i] = phraseStarts(c, s.pos, s.starts[i][:0])
		if len(s.starts[i]) == 0 {
			return false
		}
	}
	return nearWindows(s.starts, s.lens, s.slop, nil)
}

func (s *nearSearcher) next(ctx *search.SearchContext, dm *search.DocumentMatch, err error) (*search.DocumentMatch, error) {
	for dm != nil && err == nil {
		if s.matches(dm) {
			dm.FieldTermLocations = dm.FieldTermLocations[:0]
			return dm, nil
		}
		ctx.DocumentMatchPool.Put(dm)
		dm, err = s.conj.Next(ctx)
	}
	return nil, err
}

func (s *nearSearcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	dm, err := s.conj.Next(ctx)
	return s.next(ctx, dm, err)
}

func (s *nearSearcher) Advance(ctx *search.SearchContext, id index.IndexInternalID) (*search.DocumentMatch, error) {
	dm, err := s.conj.Advance(ctx, id)
	return s.next(ctx, dm, err)
}

func (s *nearSearcher) Close() error               { return s.conj.Close() }
func (s *nearSearcher) Weight() float64            { return s.conj.Weight() }
func (s *nearSearcher) SetQueryNorm(n float64)     { s.conj.SetQueryNorm(n) }
func (s *nearSearcher) Count() uint64              { return s.conj.Count() }
func (s *nearSearcher) Min() int                   { return 0 }
func (s *nearSearcher) Size() int                  { return s.conj.Size() + 64 }
func (s *nearSearcher) DocumentMatchPoolSize() int { return s.conj.DocumentMatchPoolSize() + 1 }
