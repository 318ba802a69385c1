package bleveengine

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v16"
)

// segPositional enables segPosSearcher for phrases and NEAR (the tests
// turn it off to compare it with posSearcher, which it replaces on scorch
// snapshots).
var segPositional = true

// segPosSearcher is posSearcher read segment by segment straight from the
// index's postings (issue 23: NEAR and phrases cost by their matches).
// posSearcher leapfrogs term readers that decode every posting they land
// on with its locations, copied into term vectors, although most of those
// documents lack another term; here the documents holding every term are
// first found by intersecting the terms' document bitmaps per segment, and
// only those are read with their positions (the postings iterators skip
// the others' frequencies and locations without decoding them). The
// matches, their order and their scores are posSearcher's: the same
// position rule (phraseStartsIdx, nearWindows) and the same sum of BM25
// scores over the terms.
//
// With the pair field (pairPlan), the documents must also hold the pairs
// of adjacent words of every clause, which the field's document lists
// give without positions: the candidates are then those holding every
// pair, and a phrase of two words needs no position at all (its pair is
// the rule): its matches are the pair's documents, read for their
// terms' frequencies and norms only (to score them).
//
// With the window pairs (windowPlan), the documents of a version holding a
// pair of single-word clauses must hold one of its window tokens; for a
// NEAR of two words within the window those documents need no position at
// all: the matches are the window tokens' documents (scored from the
// terms' frequencies and norms) and the documents of older versions
// (checked by their positions).
type segPosSearcher struct {
	ctx     context.Context
	checked int // candidates checked since the context was
	segs    []*scorch.SegmentSnapshot
	bases   []uint64 // first global document number of each segment
	terms   []posTerm
	scorers []bm25
	scored  bool
	clauses [][]int
	lens    []int
	slop    int
	count   uint64
	pls     [][]segment.PostingsList // per segment, per term
	pairs   [][]segment.PostingsList // per segment, per pair of the plan
	// decisive: holding the pairs is the rule (pairPlan.decisive); the
	// term iterators are then read without locations.
	decisive bool
	// win are the window constraints (windowPlan), winDecisive whether
	// the first is the rule for the documents of its versions.
	win         []windowCons
	winDecisive bool

	si   int // current segment; len(segs) when done
	open bool
	its  []segment.PostingsIterator
	cand roaring.IntPeekable
	// decided are the current segment's documents the window pairs
	// decide (winDecisive), its0 the term iterators without locations
	// that read their frequencies and norms (when scored).
	decided *roaring.Bitmap
	its0    []segment.PostingsIterator
	// allDecided says the window pairs decide every candidate of the
	// segment, decidedIt walks decided beside the candidates otherwise.
	allDecided bool
	decidedIt  roaring.IntPeekable
	// zits0 are its0 as zap v16 iterators (nil when one is not), read
	// without interface calls and scored through memos (per term).
	zits0 []*zap.PostingsIterator
	memos []*bm25Memo
	// freqs are the engine's decoded postings (nil: none), curs the
	// current segment's cursors over them (nil when not every term's are
	// decoded): read instead of zits0.
	freqs *termFreqs
	curs  []freqCursor
	// common is the window plan's C (nil: no window constraint), pcurs
	// the current segment's cursors over the terms' positions in the
	// documents of versions older than each term's own (termFreqs.
	// oldPositions; nil, or a nil p for a term without them), read by
	// check instead of zap's locations (with curs for the frequencies and
	// norms).
	common *commonSet
	pcurs  []posCursor
	all    []segment.Segment // the snapshot's segments
	pos    [][]int
	start  [][]int
	freq   []uint64
	norm   []float64
	choice []int // nearWindows' scratch

	// minScore, when above -Inf (set by topCollector, which keeps the
	// best matches by score), lets nextMatch return without a score
	// (NaN) the window-decided documents whose block's score bound
	// (blockBound) is below it: they are counted, never kept. bounds are
	// the current segment's block bounds (NaN: not computed yet; nil
	// until one is asked), boundBuf their storage.
	minScore float64
	bounds   []float64
	boundBuf []float64

	// ineligible, when not nil, names documents (by global number) known
	// to be ineligible for the search: they are skipped before their
	// positions, frequencies and norms are read (searcherBuilder's).
	ineligible func(num uint64) bool
}

// newSegPosSearcher returns a segPosSearcher for the clauses, or nil when r
// is not a scorch snapshot (posSearcher is used then).
func newSegPosSearcher(ctx context.Context, r index.IndexReader, clauses [][]posTerm, pp pairPlan, wp windowPlan, slop int, stats collectionStats, opts search.SearcherOptions) (*segPosSearcher, error) {
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok || !segPositional {
		return nil, nil
	}
	s := &segPosSearcher{ctx: ctx, segs: snap.Segments(), slop: slop, scored: opts.Score != "none", decisive: pp.decisive,
		win: wp.cons, winDecisive: wp.decisive, minScore: math.Inf(-1), common: wp.common}
	var base uint64
	for _, ss := range s.segs {
		s.bases = append(s.bases, base)
		base += ss.Segment().Count()
	}
	idx := map[posTerm]int{}
	for _, c := range clauses {
		ci := make([]int, len(c))
		for j, t := range c {
			if t.term == "" {
				ci[j] = -1
				continue
			}
			i, ok := idx[t]
			if !ok {
				i = len(s.terms)
				idx[t] = i
				s.terms = append(s.terms, t)
			}
			ci[j] = i
		}
		s.clauses = append(s.clauses, ci)
		s.lens = append(s.lens, len(c))
	}
	// Every segment's postings list of every term, read once: their
	// counts (deleted documents excluded) add up to the term reader's
	// Count, the document frequency posSearcher scores with.
	s.pls = make([][]segment.PostingsList, len(s.segs))
	counts := make([]uint64, len(s.terms))
	dicts := map[string]segment.TermDictionary{}
	postings := func(ss *scorch.SegmentSnapshot, field, term string) (segment.PostingsList, error) {
		d := dicts[field]
		if d == nil {
			var err error
			if d, err = ss.Segment().Dictionary(field); err != nil {
				return nil, err
			}
			dicts[field] = d
		}
		return d.PostingsList([]byte(term), ss.Deleted(), nil)
	}
	if len(pp.pairs) > 0 {
		s.pairs = make([][]segment.PostingsList, len(s.segs))
	}
	for si, ss := range s.segs {
		clear(dicts)
		s.pls[si] = make([]segment.PostingsList, len(s.terms))
		for i, t := range s.terms {
			pl, err := postings(ss, t.field, t.term)
			if err != nil {
				return nil, err
			}
			s.pls[si][i] = pl
			if pl != nil {
				counts[i] += pl.Count()
			}
		}
		if s.pairs != nil {
			s.pairs[si] = make([]segment.PostingsList, len(pp.pairs))
			for i, p := range pp.pairs {
				pl, err := postings(ss, fieldPairs, p)
				if err != nil {
					return nil, err
				}
				s.pairs[si][i] = pl
			}
		}
	}
	for i, t := range s.terms {
		n := counts[i]
		if i == 0 || n < s.count {
			s.count = n
		}
		var scorer bm25
		if s.scored {
			df, err := stats.docFreq(t.field, t.term, n)
			if err != nil {
				return nil, err
			}
			scorer = newBM25(stats.field(t.field), df)
		}
		s.scorers = append(s.scorers, scorer)
		if s.winDecisive && s.scored {
			s.memos = append(s.memos, newBM25Memo(scorer))
		}
	}
	n := len(s.terms)
	s.its = make([]segment.PostingsIterator, n)
	if s.winDecisive {
		s.its0 = make([]segment.PostingsIterator, n)
	}
	s.pos = make([][]int, n)
	s.freq = make([]uint64, n)
	s.norm = make([]float64, n)
	s.start = make([][]int, len(clauses))
	return s, nil
}

// actual returns the documents of a postings iterator (deleted ones
// excluded).
func actual(it segment.PostingsIterator) *roaring.Bitmap {
	o, ok := it.(segment.OptimizablePostingsIterator)
	if !ok {
		return nil
	}
	if d, ok := o.DocNum1Hit(); ok {
		return roaring.BitmapOf(uint32(d))
	}
	return o.ActualBitmap()
}

// openSeg prepares segment si: a postings iterator per term and the
// documents holding them all (and every pair of the plan).
func (s *segPosSearcher) openSeg() error {
	var bm *roaring.Bitmap
	// and intersects bm with the documents of it; false when none are
	// left.
	and := func(it segment.PostingsIterator) bool {
		var a *roaring.Bitmap
		if it != nil {
			a = actual(it)
		}
		if a == nil || a.IsEmpty() {
			bm = nil
			return false
		}
		if bm == nil {
			bm = a.Clone()
		} else {
			bm.And(a)
		}
		return !bm.IsEmpty()
	}
	ok := true
	if s.pairs != nil {
		// The pairs first: their lists are the shortest.
		for _, pl := range s.pairs[s.si] {
			var it segment.PostingsIterator
			if pl != nil {
				it = pl.Iterator(false, false, false, nil)
			}
			if ok = and(it); !ok {
				break
			}
		}
	}
	for i, pl := range s.pls[s.si] {
		var it segment.PostingsIterator
		if pl != nil {
			it = pl.Iterator(true, true, !s.decisive, nil)
			if s.its0 != nil {
				s.its0[i] = pl.Iterator(true, true, false, nil)
			}
		}
		s.its[i] = it
		if ok {
			ok = and(it)
		}
	}
	s.open = true
	s.decided, s.allDecided, s.decidedIt, s.zits0, s.curs, s.bounds, s.pcurs = nil, false, nil, nil, nil, nil, nil
	if bm == nil || bm.IsEmpty() {
		s.cand = nil
		return nil
	}
	if len(s.win) > 0 {
		var err error
		if bm, err = s.windowed(bm); err != nil {
			return err
		}
	}
	s.cand = bm.Iterator()
	if s.decided != nil && fastDecided {
		if s.decided.GetCardinality() == bm.GetCardinality() {
			s.allDecided = true
		} else {
			s.decidedIt = s.decided.Iterator()
		}
		if s.memos != nil && s.freqs != nil && decodedFreqs {
			if err := s.cursors(); err != nil {
				return err
			}
		}
		if s.curs != nil && !s.allDecided && s.common != nil && oldPosFirst {
			if err := s.posCursors(); err != nil {
				return err
			}
		}
		if s.memos != nil && s.curs == nil {
			s.zits0 = make([]*zap.PostingsIterator, len(s.its0))
			for i, it := range s.its0 {
				z, ok := it.(*zap.PostingsIterator)
				if !ok {
					s.zits0 = nil
					break
				}
				s.zits0[i] = z
			}
		}
	}
	return nil
}

// fastDecided enables the cheaper reading of the documents the window
// pairs decide (isDecided, decidedScore; the tests and BenchmarkTextCost
// turn it off to compare).
var fastDecided = true

// decodedFreqs enables reading the decided documents' frequencies and
// norms from the engine's decoded postings (termFreqs; the tests and
// BenchmarkTextCost turn it off to compare).
var decodedFreqs = true

// cursors sets s.curs for the current segment when every term's decoded
// postings are at hand.
func (s *segPosSearcher) cursors() error {
	if s.all == nil {
		for _, ss := range s.segs {
			s.all = append(s.all, ss.Segment())
		}
	}
	curs := make([]freqCursor, len(s.terms))
	for i, t := range s.terms {
		p, err := s.freqs.get(s.all[s.si], t, s.all)
		if err != nil || p == nil {
			return err
		}
		curs[i].p = p
	}
	s.curs = curs
	return nil
}

// oldPosFirst enables reading the positions of the documents older than
// a window pair from termFreqs.oldPositions (the tests and
// BenchmarkTextCost turn it off to compare).
var oldPosFirst = true

// posCursors sets s.pcurs for the current segment: a cursor over the
// positions of each term of C in the documents of versions older than
// its own.
func (s *segPosSearcher) posCursors() error {
	pcurs := make([]posCursor, len(s.terms))
	any := false
	for i, t := range s.terms {
		since := s.common.since[t.term]
		if t.field != fieldExact || since == 0 {
			continue
		}
		p, err := s.freqs.oldPositions(s.all[s.si], t, since, s.all, false)
		if err != nil {
			return err
		}
		if p != nil {
			pcurs[i].p, any = p, true
		}
	}
	if any {
		s.pcurs = pcurs
	}
	return nil
}

// cursorScore is decidedScore from the decoded postings.
func (s *segPosSearcher) cursorScore(d uint64) (float64, bool) {
	score := 0.0
	for i := range s.curs {
		f, bits, ok := s.curs[i].at(uint32(d))
		if !ok {
			return 0, false
		}
		score += s.memos[i].scoreBits(f, bits)
	}
	return score, true
}

// blockBound returns a bound of the scores of the current segment's
// documents in local document d's block (a window-decided candidate:
// every term has a posting there): the sum over the terms of the best
// score of the term's postings in the block (decodedPostings.block: BM25
// grows with the frequency and falls with the field length, so it is one
// of the undominated postings'). The sums are taken in the same order as
// cursorScore's, so no document of the block scores more; the bound is
// raised by a relative 1e-9 against rounding.
func (s *segPosSearcher) blockBound(d uint64) float64 {
	if s.bounds == nil {
		n := int(s.all[s.si].Count()>>blockShift) + 1
		s.bounds = slices.Grow(s.boundBuf[:0], n)[:n]
		s.boundBuf = s.bounds
		for i := range s.bounds {
			s.bounds[i] = math.NaN()
		}
	}
	k := int(d >> blockShift)
	if k >= len(s.bounds) {
		return math.Inf(1)
	}
	if b := s.bounds[k]; !math.IsNaN(b) {
		return b
	}
	b := 0.0
	for i := range s.curs {
		pts := s.curs[i].p.block(k)
		if len(pts) == 0 {
			// Cannot happen (d holds every term): no bound.
			b = math.Inf(1)
			break
		}
		m := 0.0
		for _, q := range pts {
			m = max(m, s.memos[i].s.score(q>>32, v16Norm(q&math.MaxUint32)))
		}
		b += m
	}
	b *= 1 + 1e-9
	s.bounds[k] = b
	return b
}

// isDecided reports whether the window pairs decide local document d, a
// candidate of the current segment (candidates are asked in order).
func (s *segPosSearcher) isDecided(d uint64) bool {
	switch {
	case s.decided == nil:
		return false
	case s.allDecided:
		return true
	case s.decidedIt != nil:
		s.decidedIt.AdvanceIfNeeded(uint32(d))
		return s.decidedIt.HasNext() && s.decidedIt.PeekNext() == uint32(d)
	}
	return s.decided.Contains(uint32(d))
}

// decidedScore is readScores and the score of a decided document d
// through zits0 and the memos: the same frequencies and norms, the same
// sum in the same order.
func (s *segPosSearcher) decidedScore(d uint64) (float64, bool, error) {
	score := 0.0
	for i, it := range s.zits0 {
		p, err := it.Advance(d)
		if err != nil || p == nil {
			return 0, false, err
		}
		zp, ok := p.(*zap.Posting)
		if !ok {
			return 0, false, nil
		}
		if zp.Number() != d {
			return 0, false, nil
		}
		score += s.memos[i].score(zp.Frequency(), zp.NormUint64(), zp)
	}
	return score, true, nil
}

// windowed applies the window constraints to the candidates bm of the
// current segment: a document of a version holding a constraint's pair
// stays only if it holds one of its window tokens; with winDecisive those
// holding the first constraint's tokens are decided (s.decided) and the
// candidates are they and the documents of older versions.
func (s *segPosSearcher) windowed(bm *roaring.Bitmap) (*roaring.Bitmap, error) {
	ss := s.segs[s.si]
	wd, err := ss.Segment().Dictionary(fieldWindow)
	if err != nil {
		return nil, err
	}
	if s.freqs != nil && decodedFreqs {
		return s.windowedCached(bm, wd)
	}
	vd, err := ss.Segment().Dictionary(fieldWindowVer)
	if err != nil {
		return nil, err
	}
	// The segment's version markers, read once.
	type marked struct {
		v    int
		docs *roaring.Bitmap
	}
	var markers []marked
	err = versionMarkers(vd, 0, ss.Deleted(), func(v int, docs *roaring.Bitmap) {
		markers = append(markers, marked{v, docs})
	})
	if err != nil {
		return nil, err
	}
	for ci, c := range s.win {
		recent := roaring.New()
		for _, m := range markers {
			if m.v >= c.since {
				recent.Or(m.docs)
			}
		}
		if err := s.applyWindow(bm, wd, ci, c, recent); err != nil {
			return nil, err
		}
	}
	return bm, nil
}

// applyWindow narrows bm, the current segment's candidates, by window
// constraint c (the ci-th), given recent, the segment's documents of the
// window versions from c.since on (not modified): of those, only the ones
// holding one of c's window tokens stay; when c decides the matches
// (winDecisive), they are the segment's decided documents.
func (s *segPosSearcher) applyWindow(bm *roaring.Bitmap, wd segment.TermDictionary, ci int, c windowCons, recent *roaring.Bitmap) error {
	held := roaring.New()
	for _, t := range c.terms {
		docs, err := docsOf(wd, t, s.segs[s.si].Deleted())
		if err != nil {
			return err
		}
		if docs != nil {
			held.Or(docs)
		}
	}
	if ci == 0 && s.winDecisive {
		bm.AndNot(recent)
		held.And(recent)
		bm.Or(held)
		s.decided = held
		return nil
	}
	bm.AndNot(roaring.AndNot(recent, held))
	return nil
}

// windowedCached is windowed with the documents of recent versions from
// the engine's termFreqs (deleted ones included: bm and the window
// tokens' documents exclude them, so the sets are the same).
func (s *segPosSearcher) windowedCached(bm *roaring.Bitmap, wd segment.TermDictionary) (*roaring.Bitmap, error) {
	if s.all == nil {
		for _, x := range s.segs {
			s.all = append(s.all, x.Segment())
		}
	}
	for ci, c := range s.win {
		recent, err := s.freqs.recentDocs(s.all[s.si], c.since, s.all)
		if err != nil {
			return nil, err
		}
		if err := s.applyWindow(bm, wd, ci, c, recent); err != nil {
			return nil, err
		}
	}
	return bm, nil
}

// docsOf returns the documents holding term in dictionary d (deleted ones
// excluded), nil when none do.
func docsOf(d segment.TermDictionary, term string, deleted *roaring.Bitmap) (*roaring.Bitmap, error) {
	pl, err := d.PostingsList([]byte(term), deleted, nil)
	if err != nil || pl == nil {
		return nil, err
	}
	return actual(pl.Iterator(false, false, false, nil)), nil
}

// versionMarkers calls fn with each window version marker of vd (a
// segment's fieldWindowVer dictionary) from version from on, and the
// marker's documents (deleted ones excluded; none excluded when deleted is
// nil).
func versionMarkers(vd segment.TermDictionary, from int, deleted *roaring.Bitmap, fn func(v int, docs *roaring.Bitmap)) error {
	it := vd.AutomatonIterator(nil, nil, nil)
	for {
		de, err := it.Next()
		if err != nil || de == nil {
			return err
		}
		v, err := strconv.Atoi(de.Term)
		if err != nil || v < from {
			continue
		}
		docs, err := docsOf(vd, de.Term, deleted)
		if err != nil {
			return err
		}
		if docs != nil {
			fn(v, docs)
		}
	}
}

// internalID encodes a global document number as scorch does.
func internalID(dst index.IndexInternalID, num uint64) index.IndexInternalID {
	return binary.BigEndian.AppendUint64(dst[:0], num)
}

func (s *segPosSearcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	d, score, ok, err := s.nextMatch()
	if err != nil || !ok {
		return nil, err
	}
	dm := ctx.DocumentMatchPool.Get()
	dm.IndexInternalID = internalID(dm.IndexInternalID, s.bases[s.si]+d)
	dm.Score = score
	return dm, nil
}

// nextMatch finds the next match: its local number in the current segment
// (s.si) and its score (NaN when minScore says it need not be scored);
// false at the end.
func (s *segPosSearcher) nextMatch() (d uint64, score float64, ok bool, err error) {
	for s.si < len(s.segs) {
		if !s.open {
			if err := s.openSeg(); err != nil {
				return 0, 0, false, err
			}
		}
		for s.cand != nil && s.cand.HasNext() {
			// Many candidates may fail the position rule in a row: the
			// search's deadline is checked here too.
			if s.checked++; s.checked%checkEvery == 0 {
				if err := s.ctx.Err(); err != nil {
					return 0, 0, false, err
				}
			}
			d := uint64(s.cand.Next())
			if s.ineligible != nil && s.ineligible(s.bases[s.si]+d) {
				// Never in the results: its positions are not read.
				continue
			}
			var ok bool
			var err error
			if s.isDecided(d) {
				if s.curs != nil {
					if s.minScore > math.Inf(-1) && s.blockBound(d) < s.minScore {
						// A match that cannot be among the best.
						return d, math.NaN(), true, nil
					}
					if score, ok := s.cursorScore(d); ok {
						return d, score, true, nil
					}
					continue
				}
				if s.zits0 != nil {
					score, ok, err := s.decidedScore(d)
					if err != nil {
						return 0, 0, false, err
					}
					if ok {
						return d, score, true, nil
					}
					continue
				}
				ok, err = s.readScores(d, s.its0)
			} else {
				ok, err = s.check(d)
			}
			if err != nil {
				return 0, 0, false, err
			}
			if !ok {
				continue
			}
			score := 0.0
			if s.scored {
				for i := range s.terms {
					score += s.scorers[i].score(s.freq[i], s.norm[i])
				}
			}
			return d, score, true, nil
		}
		s.si++
		s.open = false
	}
	return 0, 0, false, nil
}

// eachMatch calls fn with every match from here on, in order: its
// segment's index in the snapshot, its local and global numbers and its
// score. It is Next without a DocumentMatch per match (a NEAR of common
// words may match most of the index).
func (s *segPosSearcher) eachMatch(fn func(seg int, local, num uint64, score float64) error) error {
	for {
		d, score, ok, err := s.nextMatch()
		if err != nil || !ok {
			return err
		}
		if err := fn(s.si, d, s.bases[s.si]+d, score); err != nil {
			return err
		}
	}
}

// check reads the positions of every term in local document d (which
// holds them all) and applies the position rule; when the pairs decide,
// it only reads the terms' frequencies and norms (for scoring).
func (s *segPosSearcher) check(d uint64) (bool, error) {
	if s.decisive {
		return s.readScores(d, s.its)
	}
	for i, it := range s.its {
		if s.pcurs != nil && s.pcurs[i].p != nil {
			if cached, ok := s.pcurs[i].at(uint32(d)); ok {
				// The positions kept, the frequency and norm from the
				// decoded postings: zap's values.
				f, bits, ok := s.curs[i].at(uint32(d))
				if !ok {
					return false, nil
				}
				s.freq[i], s.norm[i] = f, v16Norm(bits)
				ps := s.pos[i][:0]
				for _, p := range cached {
					ps = append(ps, int(p))
				}
				s.pos[i] = ps
				continue
			}
		}
		p, err := s.at(i, it, d)
		if err != nil || p == nil {
			return false, err
		}
		ps := s.pos[i][:0]
		for _, l := range p.Locations() {
			ps = append(ps, int(l.Pos()))
		}
		if !slices.IsSorted(ps) {
			slices.Sort(ps)
		}
		s.pos[i] = ps
	}
	for i, c := range s.clauses {
		s.start[i] = phraseStartsIdx(c, s.pos, s.start[i][:0])
		if len(s.start[i]) == 0 {
			return false, nil
		}
	}
	if cap(s.choice) < len(s.start) {
		s.choice = make([]int, len(s.start))
	}
	return nearWindowsIn(s.choice, s.start, s.lens, s.slop, nil), nil
}

// readScores reads the frequency and norm of every term in local
// document d, a match (the pairs or the window pairs decided), from the
// term iterators its, when the search is scored.
func (s *segPosSearcher) readScores(d uint64, its []segment.PostingsIterator) (bool, error) {
	if !s.scored {
		return true, nil
	}
	for i, it := range its {
		if p, err := s.at(i, it, d); err != nil || p == nil {
			return false, err
		}
	}
	return true, nil
}

// at advances term i's iterator it to local document d and records the
// term's frequency and norm there; nil if d lacks the term (cannot
// happen: the candidates hold every term).
func (s *segPosSearcher) at(i int, it segment.PostingsIterator, d uint64) (segment.Posting, error) {
	p, err := it.Advance(d)
	if err != nil || p == nil || p.Number() != d {
		return nil, err
	}
	s.freq[i], s.norm[i] = p.Frequency(), p.Norm()
	return p, nil
}

func (s *segPosSearcher) Advance(ctx *search.SearchContext, id index.IndexInternalID) (*search.DocumentMatch, error) {
	if len(id) != 8 {
		return s.Next(ctx)
	}
	num := binary.BigEndian.Uint64(id)
	i := sort.Search(len(s.bases), func(x int) bool { return s.bases[x] > num }) - 1
	if i < s.si {
		i = s.si
	}
	if i >= len(s.segs) {
		s.si = len(s.segs)
		return nil, nil
	}
	if i > s.si {
		s.si, s.open = i, false
	}
	if !s.open {
		if err := s.openSeg(); err != nil {
			return nil, err
		}
	}
	if s.cand != nil && num >= s.bases[i] {
		s.cand.AdvanceIfNeeded(uint32(num - s.bases[i]))
	}
	return s.Next(ctx)
}

func (s *segPosSearcher) Close() error               { return nil }
func (s *segPosSearcher) Weight() float64            { return 0 }
func (s *segPosSearcher) SetQueryNorm(float64)       {}
func (s *segPosSearcher) Count() uint64              { return s.count }
func (s *segPosSearcher) Min() int                   { return 0 }
func (s *segPosSearcher) Size() int                  { return 256 * (1 + len(s.terms)) }
func (s *segPosSearcher) DocumentMatchPoolSize() int { return 2 }
