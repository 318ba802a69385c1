package bleveengine

import (
	"encoding/binary"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/blevesearch/bleve/v2/index/scorch"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// slotCache remembers, per index segment, the table slot of each of its
// documents, so a search maps a match to its record without reading the
// document's id from the segment (which costs more than the rest of a
// term match). It is sound because a segment is immutable (its document
// numbers always name the same ids) and a table never reassigns a slot;
// a new table (Reset) gets a new cache.
//
// The cache is filled in bulk: Open's load of the records learns the slot
// of every live document it reads (learn), and a segment the load did not
// read (one a merge or a write made later) is filled in the background
// (Engine.fillSlots) once a search has seen it, so that the searches
// after a start or a merge read the id of a match from the segment only
// for the documents neither knew (written to the index before the table,
// or in a segment not filled yet). It holds 4 bytes per document of each
// segment it knows: the current snapshot's, and the merged-away ones
// until they pile up (forgetPiled).
type slotCache struct {
	mu   sync.Mutex
	segs map[segment.Segment]*segSlots
	held int // documents of segs, all segments
	// fill, when set, is called (without mu) when a resolver saw a new
	// segment of at least slotFillMin documents.
	fill func()
	// filling says a fillSlots of this cache runs; again that a segment
	// came since it began (fillSlotsSoon).
	filling, again atomic.Bool
}

// segSlots holds slot+1 per local document number, 0 when not known yet.
type segSlots struct {
	slots []atomic.Int32
	// filled is the number of the first document the bulk fill (learn,
	// fillSlots) has not looked at yet: len(slots) when it is done.
	filled atomic.Uint64
}

// slotFillMin is the size of a new segment that starts a background fill
// (a smaller one, of a few writes, is filled with the next large one;
// meanwhile its matches are looked up, as few as its documents).
const slotFillMin = 1024

// slotFillChunk is the number of document numbers fillSlots fills under
// one hold of the engine's shared lock.
const slotFillChunk = 8192

func newSlotCache() *slotCache {
	return &slotCache{segs: make(map[segment.Segment]*segSlots)}
}

// current returns the cache's entries of the segments of snap, adding
// those it does not hold, and forgets merged-away segments once they
// pile up; fresh says whether one of at least slotFillMin documents was
// added. The caller holds c.mu.
func (c *slotCache) current(snap *scorch.IndexSnapshot) (segs []*scorch.SegmentSnapshot, out []*segSlots, fresh bool) {
	segs = snap.Segments()
	out = make([]*segSlots, len(segs))
	for i, ss := range segs {
		out[i], fresh = c.entry(ss.Segment(), fresh)
	}
	c.forgetPiled(segs)
	return segs, out, fresh
}

// entry returns seg's entry, adding it when the cache has none (fresh is
// set then if it has at least slotFillMin documents). The caller holds
// c.mu.
func (c *slotCache) entry(seg segment.Segment, fresh bool) (*segSlots, bool) {
	s := c.segs[seg]
	if s == nil {
		s = &segSlots{slots: make([]atomic.Int32, seg.Count())}
		c.segs[seg] = s
		c.held += len(s.slots)
		fresh = fresh || len(s.slots) >= slotFillMin
	}
	return s, fresh
}

// forgetPiled forgets the segments not in current once they pile up: more
// of them than twice current's and a few, or more documents. The caller
// holds c.mu.
func (c *slotCache) forgetPiled(current []*scorch.SegmentSnapshot) {
	var docs int
	for _, ss := range current {
		docs += int(ss.Segment().Count())
	}
	if !piled(len(c.segs), len(current)) && c.held <= 2*docs+slotFillChunk {
		return
	}
	keep := make(map[segment.Segment]bool, len(current))
	for _, ss := range current {
		keep[ss.Segment()] = true
	}
	forgetSegments(c.segs, keep, func(s *segSlots) { c.held -= len(s.slots) })
}

// learn records that document num of seg has the table slot slot (Open's
// load of the records, which reads every live document).
func (c *slotCache) learn(seg segment.Segment, num uint64, slot int32) {
	c.mu.Lock()
	s, _ := c.entry(seg, false)
	c.mu.Unlock()
	if num < uint64(len(s.slots)) {
		s.slots[num].Store(slot + 1)
	}
}

// learned marks every segment the cache holds as filled: the load of the
// records learnt each one's live documents (its deleted ones are never
// matched).
func (c *slotCache) learned() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.segs {
		s.filled.Store(uint64(len(s.slots)))
	}
}

// resolver maps the internal ids of one index snapshot to table slots.
type resolver struct {
	r     index.IndexReader
	tab   *table
	bases []uint64 // first global document number of each segment
	segs  []*segSlots
}

// slotCacheOn lets resolvers read the slot cache; a test turns it off to
// make every lookup find the document by its global number (the path a
// segment the cache has not filled yet takes).
var slotCacheOn = true

// resolver returns a resolver for reader r (any reader works; scorch
// snapshots use the cache).
func (c *slotCache) resolver(r index.IndexReader, tab *table) *resolver {
	rs := &resolver{r: r, tab: tab}
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return rs
	}
	c.mu.Lock()
	segs, entries, fresh := c.current(snap)
	c.mu.Unlock()
	var base uint64
	for _, ss := range segs {
		rs.bases = append(rs.bases, base)
		base += ss.Segment().Count()
	}
	if slotCacheOn {
		rs.segs = entries
	}
	if fresh && c.fill != nil {
		c.fill()
	}
	return rs
}

// slot returns the table slot of the document with internal id iid.
func (rs *resolver) slot(iid index.IndexInternalID) (int32, bool, error) {
	var entry *atomic.Int32
	if rs.segs != nil && len(iid) == 8 {
		num := binary.BigEndian.Uint64(iid)
		i := sort.Search(len(rs.bases), func(x int) bool { return rs.bases[x] > num }) - 1
		if i >= 0 {
			if local := num - rs.bases[i]; local < uint64(len(rs.segs[i].slots)) {
				entry = &rs.segs[i].slots[local]
				if v := entry.Load(); v > 0 {
					return v - 1, true, nil
				}
			}
		}
	}
	ext, err := rs.r.ExternalID(iid)
	if err != nil {
		return 0, false, err
	}
	id, err := parseDocID(ext)
	if err != nil {
		return 0, false, err
	}
	s, ok := rs.tab.slots[id]
	if !ok {
		// Written to the index but not yet to the table: not cached, the
		// next search looks again.
		return 0, false, nil
	}
	if entry != nil {
		entry.Store(s + 1)
	}
	return s, true, nil
}

// slotIn is slotAt for the document of local number local in the
// snapshot's segment seg, its global number from the resolver's bases.
func (rs *resolver) slotIn(seg int, local uint64) (int32, bool, error) {
	return rs.slotAt(seg, local, rs.bases[seg]+local)
}

// slotAt is slot for the document of local number local in the
// snapshot's segment seg (global number num), without finding the
// segment.
func (rs *resolver) slotAt(seg int, local, num uint64) (int32, bool, error) {
	if rs.segs != nil && seg < len(rs.segs) && local < uint64(len(rs.segs[seg].slots)) {
		if v := rs.segs[seg].slots[local].Load(); v > 0 {
			return v - 1, true, nil
		}
	}
	var buf [8]byte
	return rs.slot(internalID(buf[:0], num))
}

// cachedSlot returns the table slot of the document of global number num
// when the cache knows it (no stored field is read: false otherwise).
func (rs *resolver) cachedSlot(num uint64) (int32, bool) {
	if rs.segs == nil {
		return 0, false
	}
	i := sort.Search(len(rs.bases), func(x int) bool { return rs.bases[x] > num }) - 1
	if i < 0 {
		return 0, false
	}
	local := num - rs.bases[i]
	if local >= uint64(len(rs.segs[i].slots)) {
		return 0, false
	}
	if v := rs.segs[i].slots[local].Load(); v > 0 {
		return v - 1, true
	}
	return 0, false
}

// newSlots returns a slot cache for a new table of e, filled in the
// background.
func (e *Engine) newSlots() *slotCache {
	c := newSlotCache()
	c.fill = func() { e.fillSlotsSoon(c) }
	return c
}

// fillSlotsSoon starts fillSlots for c unless one runs (which then looks
// again when it is done).
func (e *Engine) fillSlotsSoon(c *slotCache) {
	c.again.Store(true)
	if c.filling.Swap(true) {
		return
	}
	go e.fillSlots(c)
}

// fillSlots fills the slots of the live documents of the current
// snapshot's segments that c has not filled, slotFillChunk documents at a
// time under the engine's shared lock (a write waits for one chunk at
// most); it stops when the engine is closed or reset (c is not its cache
// any more).
func (e *Engine) fillSlots(c *slotCache) {
	for {
		c.again.Store(false)
		for {
			more, err := e.fillChunk(c)
			if err != nil {
				slog.Warn("bleveengine: filling the slot cache (searches look the slots up instead)", "dir", e.dir, "error", err)
				break
			}
			if !more {
				break
			}
		}
		c.filling.Store(false)
		if !c.again.Load() || c.filling.Swap(true) {
			return
		}
	}
}

// scorchSnapshot opens a reader of the index and returns it as a scorch
// snapshot (nil when the index is not scorch's) with the reader to close.
// The caller holds mu.
func (e *Engine) scorchSnapshot() (*scorch.IndexSnapshot, index.IndexReader, error) {
	adv, err := e.idx.Advanced()
	if err != nil {
		return nil, nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, nil, err
	}
	snap, _ := r.(*scorch.IndexSnapshot)
	return snap, r, nil
}

// fillChunk fills up to slotFillChunk document numbers of the first
// segment of the current snapshot that c has not filled; false when there
// is none (or the engine is closed or reset).
func (e *Engine) fillChunk(c *slotCache) (bool, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed || e.slots != c {
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
	c.mu.Lock()
	segs, entries, _ := c.current(snap)
	c.mu.Unlock()
	for i, s := range entries {
		from := s.filled.Load()
		if from >= uint64(len(s.slots)) {
			continue
		}
		to := min(from+slotFillChunk, uint64(len(s.slots)))
		if err := fillSegment(segs[i], s, from, to, e.tab); err != nil {
			return false, err
		}
		s.filled.Store(to)
		return true, nil
	}
	return false, nil
}

// fillSegment fills the slots of the live documents numbered from to to-1
// of ss that tab holds (one written to the index but not yet to the
// table is left to the searches' look-ups).
func fillSegment(ss *scorch.SegmentSnapshot, s *segSlots, from, to uint64, tab *table) error {
	deleted := ss.Deleted()
	for num := from; num < to; num++ {
		if deleted != nil && deleted.Contains(uint32(num)) || s.slots[num].Load() > 0 {
			continue
		}
		ext, err := ss.DocID(num)
		if err != nil {
			return err
		}
		if len(ext) == 0 {
			continue
		}
		// Parsed in place (the id is not kept).
		id, err := strconv.ParseInt(unsafe.String(&ext[0], len(ext)), 10, 64)
		if err != nil {
			_, err = parseDocID(string(ext))
			return err
		}
		if slot, ok := tab.slots[id]; ok {
			s.slots[num].Store(slot + 1)
		}
	}
	return nil
}
