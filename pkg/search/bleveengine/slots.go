package bleveengine

import (
	"encoding/binary"
	"sort"
	"sync"
	"sync/atomic"

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
type slotCache struct {
	mu   sync.Mutex
	segs map[segment.Segment]*segSlots
}

// segSlots holds slot+1 per local document number, 0 when not known yet.
type segSlots struct {
	slots []atomic.Int32
}

func newSlotCache() *slotCache {
	return &slotCache{segs: make(map[segment.Segment]*segSlots)}
}

// resolver maps the internal ids of one index snapshot to table slots.
type resolver struct {
	r     index.IndexReader
	tab   *table
	bases []uint64 // first global document number of each segment
	segs  []*segSlots
}

// resolver returns a resolver for reader r (any reader works; scorch
// snapshots use the cache).
func (c *slotCache) resolver(r index.IndexReader, tab *table) *resolver {
	rs := &resolver{r: r, tab: tab}
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return rs
	}
	segs := snap.Segments()
	c.mu.Lock()
	defer c.mu.Unlock()
	var base uint64
	current := make(map[segment.Segment]bool, len(segs))
	for _, ss := range segs {
		seg := ss.Segment()
		current[seg] = true
		s := c.segs[seg]
		if s == nil {
			s = &segSlots{slots: make([]atomic.Int32, seg.Count())}
			c.segs[seg] = s
		}
		rs.bases = append(rs.bases, base)
		rs.segs = append(rs.segs, s)
		base += seg.Count()
	}
	// Forget merged-away segments once they pile up.
	if piled(len(c.segs), len(segs)) {
		forgetSegments(c.segs, current, nil)
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
