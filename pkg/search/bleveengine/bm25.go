package bleveengine

import (
	"container/heap"
	"context"
	"math"

	"github.com/blevesearch/bleve/v2/search"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// BM25 parameters: Lucene's (and so OpenSearch's) defaults. On SciFact
// they beat the alternatives tried (k1 0.9–1.5, b 0.4–0.9) within ±0.005
// nDCG@10, so the engines keep the same parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// fieldStats are a field's BM25 collection statistics.
type fieldStats struct {
	docs   float64 // N: documents with content
	avgLen float64 // average field length in tokens
}

// collectionStats are the statistics a search scores with: a field's
// (field) and a term's document frequency (docFreq), both over the
// documents the caller can see (statsView).
type collectionStats interface {
	field(name string) fieldStats
	// docFreq returns how many of those documents contain term in
	// field; all is the number in the whole index.
	docFreq(field, term string, all uint64) (uint64, error)
}

// bm25 scores one term of one field, the Lucene way (BM25Similarity):
//
//	idf = ln(1 + (N - n + 0.5) / (n + 0.5))
//	score = idf · f·(k1+1) / (f + k1·(1 - b + b·dl/avgdl))
//
// with f the term's frequency in the document, n the number of documents
// containing it and dl the document's field length (recovered from
// bleve's norm, 1/√dl). Scores of several terms add up, without
// coordination factors or query normalisation.
type bm25 struct {
	idf, avgLen float64
}

func newBM25(st fieldStats, docFreq uint64) bm25 {
	n := float64(docFreq)
	// The index may briefly hold documents the table does not count yet;
	// N never goes below n, so idf stays positive.
	docs := math.Max(st.docs, n)
	return bm25{idf: math.Log(1 + (docs-n+0.5)/(n+0.5)), avgLen: st.avgLen}
}

func (s bm25) score(freq uint64, norm float64) float64 {
	f := float64(freq)
	norm1 := 1.0
	if s.avgLen > 0 && norm > 0 {
		dl := 1 / (norm * norm)
		norm1 = 1 - bm25B + bm25B*dl/s.avgLen
	}
	return s.idf * f * (bm25K1 + 1) / (f + bm25K1*norm1)
}

// termSearcher matches the documents containing a term, scored by bm25.
type termSearcher struct {
	r      index.TermFieldReader
	tfd    index.TermFieldDoc
	scorer bm25
	scored bool
}

func newTermSearcher(ctx context.Context, r index.IndexReader, term, field string, stats collectionStats, opts search.SearcherOptions) (search.Searcher, error) {
	scored := opts.Score != "none"
	tfr, err := r.TermFieldReader(ctx, []byte(term), field, scored, scored, false)
	if err != nil {
		return nil, err
	}
	s := &termSearcher{r: tfr, scored: scored}
	if scored {
		n, err := stats.docFreq(field, term, tfr.Count())
		if err != nil {
			_ = tfr.Close()
			return nil, err
		}
		s.scorer = newBM25(stats.field(field), n)
	}
	return s, nil
}

func (s *termSearcher) match(ctx *search.SearchContext, tfd *index.TermFieldDoc, err error) (*search.DocumentMatch, error) {
	if err != nil || tfd == nil {
		return nil, err
	}
	dm := ctx.DocumentMatchPool.Get()
	dm.IndexInternalID = append(dm.IndexInternalID[:0], tfd.ID...)
	dm.Score = 0
	if s.scored {
		dm.Score = s.scorer.score(tfd.Freq, tfd.Norm)
	}
	return dm, nil
}

func (s *termSearcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	tfd, err := s.r.Next(s.tfd.Reset())
	return s.match(ctx, tfd, err)
}

func (s *termSearcher) Advance(ctx *search.SearchContext, id index.IndexInternalID) (*search.DocumentMatch, error) {
	tfd, err := s.r.Advance(id, s.tfd.Reset())
	return s.match(ctx, tfd, err)
}

func (s *termSearcher) Close() error               { return s.r.Close() }
func (s *termSearcher) Weight() float64            { return 0 }
func (s *termSearcher) SetQueryNorm(float64)       {}
func (s *termSearcher) Count() uint64              { return s.r.Count() }
func (s *termSearcher) Min() int                   { return 0 }
func (s *termSearcher) Size() int                  { return 128 + s.r.Size() }
func (s *termSearcher) DocumentMatchPoolSize() int { return 1 }

// orSearcher matches the documents matching any of its searchers and
// scores the sum of the scores of those that match (bleve's disjunction
// would also multiply by the fraction of them that match).
type orSearcher struct {
	subs    []search.Searcher
	cur     orHeap
	started bool
}

type orEntry struct {
	dm  *search.DocumentMatch
	sub int
}

type orHeap []orEntry

func (h orHeap) Len() int { return len(h) }
func (h orHeap) Less(i, j int) bool {
	return h[i].dm.IndexInternalID.Compare(h[j].dm.IndexInternalID) < 0
}
func (h orHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *orHeap) Push(x any)   { *h = append(*h, x.(orEntry)) }
func (h *orHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newOrSearcher(subs []search.Searcher) *orSearcher {
	return &orSearcher{subs: subs, cur: make(orHeap, 0, len(subs))}
}

func (s *orSearcher) start(ctx *search.SearchContext, id index.IndexInternalID) error {
	s.started = true
	for i, sub := range s.subs {
		var dm *search.DocumentMatch
		var err error
		if id == nil {
			dm, err = sub.Next(ctx)
		} else {
			dm, err = sub.Advance(ctx, id)
		}
		if err != nil {
			return err
		}
		if dm != nil {
			s.cur = append(s.cur, orEntry{dm: dm, sub: i})
		}
	}
	heap.Init(&s.cur)
	return nil
}

// next returns the match of the smallest current document, advancing the
// searchers standing on it.
func (s *orSearcher) next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	if len(s.cur) == 0 {
		return nil, nil
	}
	top := s.cur[0].dm
	rv := ctx.DocumentMatchPool.Get()
	rv.IndexInternalID = append(rv.IndexInternalID[:0], top.IndexInternalID...)
	rv.Score = 0
	for len(s.cur) > 0 && s.cur[0].dm.IndexInternalID.Equals(rv.IndexInternalID) {
		e := s.cur[0]
		rv.Score += e.dm.Score
		ctx.DocumentMatchPool.Put(e.dm)
		dm, err := s.subs[e.sub].Next(ctx)
		if err != nil {
			return nil, err
		}
		if dm == nil {
			heap.Pop(&s.cur)
		} else {
			s.cur[0].dm = dm
			heap.Fix(&s.cur, 0)
		}
	}
	return rv, nil
}

func (s *orSearcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	if !s.started {
		if err := s.start(ctx, nil); err != nil {
			return nil, err
		}
	}
	return s.next(ctx)
}

func (s *orSearcher) Advance(ctx *search.SearchContext, id index.IndexInternalID) (*search.DocumentMatch, error) {
	if !s.started {
		if err := s.start(ctx, id); err != nil {
			return nil, err
		}
		return s.next(ctx)
	}
	for len(s.cur) > 0 && s.cur[0].dm.IndexInternalID.Compare(id) < 0 {
		e := s.cur[0]
		ctx.DocumentMatchPool.Put(e.dm)
		dm, err := s.subs[e.sub].Advance(ctx, id)
		if err != nil {
			return nil, err
		}
		if dm == nil {
			heap.Pop(&s.cur)
		} else {
			s.cur[0].dm = dm
			heap.Fix(&s.cur, 0)
		}
	}
	return s.next(ctx)
}

func (s *orSearcher) Close() error {
	var first error
	for _, sub := range s.subs {
		if err := sub.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (s *orSearcher) Weight() float64      { return 0 }
func (s *orSearcher) SetQueryNorm(float64) {}

func (s *orSearcher) Count() uint64 {
	var c uint64
	for _, sub := range s.subs {
		c += sub.Count()
	}
	return c
}

func (s *orSearcher) Min() int { return 0 }

func (s *orSearcher) Size() int {
	n := 64
	for _, sub := range s.subs {
		n += sub.Size()
	}
	return n
}

func (s *orSearcher) DocumentMatchPoolSize() int {
	n := 1
	for _, sub := range s.subs {
		n += sub.DocumentMatchPoolSize()
	}
	return n
}

// bm25Memo is a bm25 remembering its scores by term frequency and norm
// bits (the norm as the segment stores it: zap v16 the field length), so
// that scoring a posting seen before is a table lookup. A score is
// computed by bm25.score from the posting's own Norm the first time, so
// the memo returns exactly what score would (Norm is a function of the
// stored bits in every segment version).
type bm25Memo struct {
	s   bm25
	tab []float64 // [freq·memoNorms + bits]; 0 = not yet (scores are > 0)
}

// The memo's bounds: postings of larger frequencies or norm bits are
// scored directly.
const (
	memoFreqs = 8
	memoNorms = 512
)

func newBM25Memo(s bm25) *bm25Memo {
	return &bm25Memo{s: s}
}

// scoreBits is score for a zap v16 posting (its Norm is v16Norm(bits)).
func (m *bm25Memo) scoreBits(freq, bits uint64) float64 {
	if freq >= memoFreqs || bits >= memoNorms {
		return m.s.score(freq, v16Norm(bits))
	}
	if m.tab == nil {
		m.tab = make([]float64, memoFreqs*memoNorms)
	}
	k := freq*memoNorms + bits
	if v := m.tab[k]; v != 0 {
		return v
	}
	v := m.s.score(freq, v16Norm(bits))
	m.tab[k] = v
	return v
}

// score returns s.score(freq, p.Norm()) for a posting p of that
// frequency and norm bits.
func (m *bm25Memo) score(freq, bits uint64, p segment.Posting) float64 {
	if freq >= memoFreqs || bits >= memoNorms {
		return m.s.score(freq, p.Norm())
	}
	if m.tab == nil {
		m.tab = make([]float64, memoFreqs*memoNorms)
	}
	k := freq*memoNorms + bits
	if v := m.tab[k]; v != 0 {
		return v
	}
	v := m.s.score(freq, p.Norm())
	m.tab[k] = v
	return v
}
