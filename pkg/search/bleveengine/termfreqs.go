package bleveengine

import (
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v16"
)

// termFreqs remembers, per index segment and term, the term's postings
// in that segment decoded: the document numbers with each one's term
// frequency and norm bits (issue 23). A NEAR of two common words that the
// window pairs decide needs, for each of its up to a million matches, both
// terms' frequencies and norms, and zap keeps those as varints that are
// decoded from the start of a chunk (~100 ns a match for the two terms);
// the common terms are few (C, at most commonRule.cap) and a segment never
// changes, so they are decoded once, on first use, and later searches read
// them from memory, 6 bytes a posting (a few, of a frequency from 16 or
// norm bits from 4,096, in a map beside). Only zap v16 segments are
// kept; the others are read as before. The cache
// holds at most termFreqsBudget bytes: it forgets the segments the
// current snapshot no longer has when they pile up or it is full, and past
// that it adds nothing.
//
// It also remembers, per segment, the documents of the window pairs'
// versions from a given one on (recentDocs): a NEAR of two common words
// reads them for every segment, and a segment holds up to one version
// marker per version of C (97 at 1 M documents).
type termFreqs struct {
	mu     sync.Mutex
	bytes  int
	segs   map[segment.Segment]map[posTerm]*decodedPostings
	recent map[segment.Segment]map[int]*roaring.Bitmap
	// old are the positions of the documents older than each term's
	// window version (oldPositions), oldBytes their memory, at most
	// oldPosBudget (beside termFreqsBudget).
	old      map[segment.Segment]map[posTerm]*oldPositions
	oldBytes int
	// asked are the (segment, term) pairs whose oldPositions were asked
	// for once: they are decoded when asked again (a term a single search
	// asks for costs it no more than zap's locations of its candidates).
	asked map[segment.Segment]map[posTerm]bool
}

// oldPosBudget bounds the memory of an engine's oldPositions: a term's
// are at most about commonRule.minDocs + commonRule.checkEvery documents
// of a few positions (~0.5 MiB), so 96 MiB hold those of ~200 terms.
const oldPosBudget = 96 << 20

// termFreqsBudget bounds the memory of an engine's termFreqs (at 1 M
// documents the postings of C's 334 terms hold ~40 M postings, 240 MB;
// the searches' pairs touch a part of them).
const termFreqsBudget = 256 << 20

// decodedPostings are one term's postings in one segment, deleted
// documents included (a snapshot's deletions change, the segment does
// not).
type decodedPostings struct {
	docs []uint32
	// fn is the frequency (<< 12) and norm bits of each posting, 0 when
	// they do not fit: then over has them (frequency << 32 | bits).
	fn   []uint16
	over map[uint32]uint64
	// blkOff and blkPts bound the scores of each block of blockDocs
	// document numbers (block k: numbers k·blockDocs to
	// (k+1)·blockDocs-1): blkPts[blkOff[k]:blkOff[k+1]] are the block's
	// postings that no other of the block dominates (one of a larger or
	// equal frequency and smaller or equal norm bits), as frequency << 32
	// | norm bits. BM25 grows with the frequency and falls with the field
	// length, so for any collection statistics the best score of the
	// block is one of theirs (blockBound); a block past the end has none.
	blkOff []uint32
	blkPts []uint64
}

// blockShift makes blocks of blockDocs document numbers for the score
// bounds of decoded postings: 4 bytes a block and 8 a point of a block
// (a point per frequency at most; a common term's block has a few), under
// 10 % of the postings' 6 bytes each.
const (
	blockShift = 6
	blockDocs  = 1 << blockShift
)

func (p *decodedPostings) size() int {
	return 6*len(p.docs) + 32*len(p.over) + 4*cap(p.blkOff) + 8*cap(p.blkPts) + 64
}

// block returns the undominated postings of block k (none when it has no
// posting), as frequency << 32 | norm bits.
func (p *decodedPostings) block(k int) []uint64 {
	if k+1 >= len(p.blkOff) {
		return nil
	}
	return p.blkPts[p.blkOff[k]:p.blkOff[k+1]]
}

// get returns the decoded postings of t in segment seg (nil when they
// cannot be kept), decoding them on first use; current are the segments
// of the snapshot asking.
func (c *termFreqs) get(seg segment.Segment, t posTerm, current []segment.Segment) (*decodedPostings, error) {
	c.mu.Lock()
	p, ok := c.segs[seg][t]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := decodePostings(seg, t)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p != nil && c.bytes+p.size() > termFreqsBudget {
		c.forget(current)
	}
	if p != nil && c.bytes+p.size() > termFreqsBudget {
		return p, nil // used once, not kept
	}
	if c.segs == nil {
		c.segs = map[segment.Segment]map[posTerm]*decodedPostings{}
	}
	m := c.segs[seg]
	if m == nil {
		m = map[posTerm]*decodedPostings{}
		c.segs[seg] = m
	}
	if _, ok := m[t]; !ok {
		m[t] = p
		if p != nil {
			c.bytes += p.size()
		}
	}
	c.forgetPiled(current)
	return p, nil
}

// forgetPiled forgets the merged-away segments once they pile up (as
// slotCache does), so that their postings do not stay until the budget is
// reached. The caller holds c.mu.
func (c *termFreqs) forgetPiled(current []segment.Segment) {
	if piled(len(c.segs), len(current)) || piled(len(c.recent), len(current)) || piled(len(c.old), len(current)) {
		c.forget(current)
	}
}

// piled says whether a cache holding segments of held segments, of which
// current are the snapshot's, should forget the others: more than twice
// current and a few.
func piled(held, current int) bool { return held > 2*current+8 }

// forgetSegments deletes from m the segments not in keep, passing each
// one's value to drop (a cache's accounting) first.
func forgetSegments[V any](m map[segment.Segment]V, keep map[segment.Segment]bool, drop func(V)) {
	for s, v := range m {
		if keep[s] {
			continue
		}
		if drop != nil {
			drop(v)
		}
		delete(m, s)
	}
}

// recentDocs returns the documents of seg (deleted ones included) whose
// window version marker is since or later. The bitmap is shared: callers
// must not modify it.
func (c *termFreqs) recentDocs(seg segment.Segment, since int, current []segment.Segment) (*roaring.Bitmap, error) {
	c.mu.Lock()
	bm := c.recent[seg][since]
	c.mu.Unlock()
	if bm != nil {
		return bm, nil
	}
	vd, err := seg.Dictionary(fieldWindowVer)
	if err != nil {
		return nil, err
	}
	bm = roaring.New()
	if err := versionMarkers(vd, since, nil, func(_ int, docs *roaring.Bitmap) { bm.Or(docs) }); err != nil {
		return nil, err
	}
	// A copy of its own (the segment's bitmaps may lie in its file).
	bm = bm.Clone()
	size := int(bm.GetSizeInBytes()) + 64
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes+size > termFreqsBudget {
		c.forget(current)
	}
	if c.bytes+size > termFreqsBudget {
		return bm, nil // used once, not kept
	}
	if c.recent == nil {
		c.recent = map[segment.Segment]map[int]*roaring.Bitmap{}
	}
	m := c.recent[seg]
	if m == nil {
		m = map[int]*roaring.Bitmap{}
		c.recent[seg] = m
	}
	if _, ok := m[since]; !ok {
		m[since] = bm
		c.bytes += size
	}
	c.forgetPiled(current)
	return bm, nil
}

// forget drops the segments not in current. The caller holds c.mu.
func (c *termFreqs) forget(current []segment.Segment) {
	keep := make(map[segment.Segment]bool, len(current))
	for _, s := range current {
		keep[s] = true
	}
	forgetSegments(c.recent, keep, func(m map[int]*roaring.Bitmap) {
		for _, bm := range m {
			c.bytes -= int(bm.GetSizeInBytes()) + 64
		}
	})
	forgetSegments(c.asked, keep, nil)
	forgetSegments(c.old, keep, unsize[*oldPositions](&c.oldBytes))
	forgetSegments(c.segs, keep, unsize[*decodedPostings](&c.bytes))
}

// unsize returns a forgetSegments drop that takes the sizes of a
// segment's entries (a nil one holds nothing) off *total.
func unsize[P interface {
	comparable
	size() int
}](total *int) func(map[posTerm]P) {
	return func(m map[posTerm]P) {
		var none P
		for _, p := range m {
			if p != none {
				*total -= p.size()
			}
		}
	}
}

// oldPositions are one term's positions in the documents of one segment
// whose window version is older than the term's (or that have none): the
// only documents of a NEAR of two common words that are checked by their
// positions (segPosSearcher.check), the same ones in every such search
// of the term; at most about commonRule.minDocs + commonRule.checkEvery
// documents a term, as the term joined C at that document frequency.
type oldPositions struct {
	docs []uint32
	off  []uint32 // docs[i]'s positions: pos[off[i]:off[i+1]], sorted
	pos  []uint32
}

func (p *oldPositions) size() int { return 4*(len(p.docs)+len(p.off)+len(p.pos)) + 64 }

// oldPositions returns t's positions in the documents of seg whose
// window version is below since (the version t joined C in), deleted
// ones included, decoding them the second time they are asked for, or the
// first when first is set (nil when they are not decoded or cannot be
// kept: then the searches read them as before).
func (c *termFreqs) oldPositions(seg segment.Segment, t posTerm, since int, current []segment.Segment, first bool) (*oldPositions, error) {
	c.mu.Lock()
	p, ok := c.old[seg][t]
	if !ok && !first && !c.asked[seg][t] {
		if c.asked == nil {
			c.asked = map[segment.Segment]map[posTerm]bool{}
		}
		if c.asked[seg] == nil {
			c.asked[seg] = map[posTerm]bool{}
		}
		c.asked[seg][t] = true
		c.mu.Unlock()
		return nil, nil
	}
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	recent, err := c.recentDocs(seg, since, current)
	if err != nil {
		return nil, err
	}
	// fits says whether n documents' positions (~12 bytes each) can be
	// kept; they are not decoded otherwise (the search reads the
	// candidates' positions from zap as before, fewer than the term's).
	fits := func(n uint64) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.oldBytes+12*int(n) > oldPosBudget {
			c.forget(current)
		}
		return c.oldBytes+12*int(n) <= oldPosBudget
	}
	p, err = decodeOldPositions(seg, t, recent, fits)
	if err != nil || p == nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.oldBytes+p.size() > oldPosBudget {
		return p, nil // used once, not kept
	}
	if c.old == nil {
		c.old = map[segment.Segment]map[posTerm]*oldPositions{}
	}
	m := c.old[seg]
	if m == nil {
		m = map[posTerm]*oldPositions{}
		c.old[seg] = m
	}
	if _, ok := m[t]; !ok {
		m[t] = p
		c.oldBytes += p.size()
	}
	c.forgetPiled(current)
	return p, nil
}

// decodeOldPositions reads t's positions in the documents of seg not in
// recent, if fits says that their number can be kept (nil otherwise).
func decodeOldPositions(seg segment.Segment, t posTerm, recent *roaring.Bitmap, fits func(n uint64) bool) (*oldPositions, error) {
	d, err := seg.Dictionary(t.field)
	if err != nil {
		return nil, err
	}
	pl, err := d.PostingsList([]byte(t.term), nil, nil)
	if err != nil || pl == nil {
		return nil, err
	}
	all := actual(pl.Iterator(false, false, false, nil))
	if all == nil {
		return nil, nil
	}
	docs := roaring.AndNot(all, recent)
	if !fits(docs.GetCardinality()) {
		return nil, nil
	}
	out := &oldPositions{docs: make([]uint32, 0, docs.GetCardinality()), off: []uint32{0}}
	it := pl.Iterator(true, true, true, nil)
	for di := docs.Iterator(); di.HasNext(); {
		n := di.Next()
		p, err := it.Advance(uint64(n))
		if err != nil {
			return nil, err
		}
		if p == nil || p.Number() != uint64(n) {
			return nil, nil
		}
		start := len(out.pos)
		for _, l := range p.Locations() {
			if l.Pos() > math.MaxUint32 {
				return nil, nil
			}
			out.pos = append(out.pos, uint32(l.Pos()))
		}
		slices.Sort(out.pos[start:])
		out.docs = append(out.docs, n)
		out.off = append(out.off, uint32(len(out.pos)))
	}
	return out, nil
}

// posCursor reads oldPositions for increasing document numbers.
type posCursor struct {
	p *oldPositions
	j int
}

// at returns the positions of local document d, which must not be below
// the last one asked; false when d is not one of the documents.
func (c *posCursor) at(d uint32) ([]uint32, bool) {
	docs, j := c.p.docs, c.j
	for k := 0; k < 8 && j < len(docs) && docs[j] < d; k++ {
		j++
	}
	if j < len(docs) && docs[j] < d {
		j += sort.Search(len(docs)-j, func(x int) bool { return docs[j+x] >= d })
	}
	c.j = j
	if j == len(docs) || docs[j] != d {
		return nil, false
	}
	return c.p.pos[c.p.off[j]:c.p.off[j+1]], true
}

// v16Norm is zap v16's Posting.Norm of norm bits (the field length).
func v16Norm(bits uint64) float64 {
	return float64(float32(1.0 / math.Sqrt(float64(bits))))
}

// decodePostings decodes t's postings in seg, or returns nil when the
// segment is not zap v16 or a posting does not fit (checking that every
// posting's Norm is v16Norm of its bits, which the memo relies on).
func decodePostings(seg segment.Segment, t posTerm) (*decodedPostings, error) {
	d, err := seg.Dictionary(t.field)
	if err != nil {
		return nil, err
	}
	pl, err := d.PostingsList([]byte(t.term), nil, nil)
	if err != nil || pl == nil {
		return nil, err
	}
	n := pl.Count()
	out := &decodedPostings{docs: make([]uint32, 0, n), fn: make([]uint16, 0, n),
		blkOff: make([]uint32, 0, seg.Count()>>blockShift+2)}
	var front []uint64 // the current block's undominated postings
	cur := -1          // the current block
	it := pl.Iterator(true, true, false, nil)
	for {
		p, err := it.Next()
		if err != nil {
			return nil, err
		}
		if p == nil {
			break
		}
		zp, ok := p.(*zap.Posting)
		if !ok {
			return nil, nil
		}
		f, bits := zp.Frequency(), zp.NormUint64()
		if f == 0 || f > math.MaxUint32 || bits > math.MaxUint32 || zp.Number() > math.MaxUint32 || v16Norm(bits) != zp.Norm() {
			return nil, nil
		}
		d := uint32(zp.Number())
		out.docs = append(out.docs, d)
		if k := int(d >> blockShift); k != cur {
			out.blkPts = append(out.blkPts, front...)
			front = front[:0]
			for len(out.blkOff) <= k {
				out.blkOff = append(out.blkOff, uint32(len(out.blkPts)))
			}
			cur = k
		}
		front = undominated(front, f, bits)
		if f >= 16 || bits >= 1<<12 {
			if out.over == nil {
				out.over = map[uint32]uint64{}
			}
			out.over[d] = f<<32 | bits
			out.fn = append(out.fn, 0)
			continue
		}
		out.fn = append(out.fn, uint16(f<<12|bits))
	}
	out.blkPts = append(out.blkPts, front...)
	out.blkOff = append(out.blkOff, uint32(len(out.blkPts)))
	out.blkPts = slices.Clip(out.blkPts)
	return out, nil
}

// undominated adds the posting of frequency f and norm bits to front, the
// postings of a block that no other dominates, and returns it.
func undominated(front []uint64, f, bits uint64) []uint64 {
	for _, q := range front {
		if q>>32 >= f && q&math.MaxUint32 <= bits {
			return front
		}
	}
	out := front[:0]
	for _, q := range front {
		if f < q>>32 || bits > q&math.MaxUint32 {
			out = append(out, q)
		}
	}
	return append(out, f<<32|bits)
}

// freqCursor reads decoded postings for increasing document numbers.
type freqCursor struct {
	p *decodedPostings
	j int
}

// at returns the frequency and norm bits of local document d, which must
// not be below the last one asked; false when the term is not in d.
func (c *freqCursor) at(d uint32) (freq, bits uint64, ok bool) {
	docs, j := c.p.docs, c.j
	// A few steps, then a binary search (a rarer document list).
	for k := 0; k < 8 && j < len(docs) && docs[j] < d; k++ {
		j++
	}
	if j < len(docs) && docs[j] < d {
		j += sort.Search(len(docs)-j, func(x int) bool { return docs[j+x] >= d })
	}
	c.j = j
	if j == len(docs) || docs[j] != d {
		return 0, 0, false
	}
	fn := uint64(c.p.fn[j])
	if fn == 0 {
		o := c.p.over[d]
		return o >> 32, o & math.MaxUint32, true
	}
	return fn >> 12, fn & (1<<12 - 1), true
}

// warmFreqsAtOpen enables warmFreqs after Open.
var warmFreqsAtOpen = true

// warmShare is the part of termFreqsBudget warmFreqs may fill: the rest
// stays for the terms the searches ask for.
const warmShare = 2

// warmFreqs decodes, in the background after Open, the postings of
// terms (C's, in the order they joined it: the commonest first) in every
// segment of the index, until termFreqsBudget/warmShare bytes are held
// (at 1 M documents the 334 terms of C hold more), and their positions in
// the documents older than their version (oldPositions) until
// oldPosBudget/warmShare are. Otherwise the first NEAR of
// common words after a start decodes each of its terms in every segment
// (tens of milliseconds a term at 1 M documents): the first searches of
// a new process were the slowest. It holds the engine's shared lock one
// term at a time and stops when the engine is closed.
func (e *Engine) warmFreqs(terms []string) {
	defer close(e.warmed)
	t0, n := time.Now(), 0
	for _, t := range terms {
		more, err := e.warmTerm(t)
		if err != nil {
			slog.Warn("bleveengine: warming the decoded postings", "dir", e.dir, "term", t, "error", err)
			return
		}
		n++
		if !more {
			break
		}
	}
	e.freqs.mu.Lock()
	held, old := e.freqs.bytes, e.freqs.oldBytes
	e.freqs.mu.Unlock()
	slog.Info("bleveengine: decoded postings warmed", "dir", e.dir, "terms", n, "of", len(terms),
		"mib", held>>20, "old_positions_mib", old>>20, "took", time.Since(t0).Round(time.Millisecond))
}

// warmTerm decodes term's postings in every segment of the current
// snapshot; false when the engine is closed or the warming share is full.
func (e *Engine) warmTerm(term string) (bool, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return false, nil
	}
	snap, r, err := e.scorchSnapshot()
	if err != nil {
		return false, err
	}
	defer r.Close()
	if snap == nil {
		return false, nil
	}
	var all []segment.Segment
	for _, ss := range snap.Segments() {
		all = append(all, ss.Segment())
	}
	t := posTerm{field: fieldExact, term: term}
	since := e.common.Load().since[term]
	for _, seg := range all {
		e.freqs.mu.Lock()
		full := e.freqs.bytes >= termFreqsBudget/warmShare
		oldFull := e.freqs.oldBytes >= oldPosBudget/warmShare
		e.freqs.mu.Unlock()
		if full {
			return false, nil
		}
		if _, err := e.freqs.get(seg, t, all); err != nil {
			return false, err
		}
		if since > 0 && !oldFull {
			if _, err := e.freqs.oldPositions(seg, t, since, all, true); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}
