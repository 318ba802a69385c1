package bleveengine

import (
	"container/list"
	"strconv"
	"strings"
	"sync"

	index "github.com/blevesearch/bleve_index_api"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// statsCacheSize bounds the statistics views a table keeps: one per
// visibility (group set) recently searched. A view of n slots holds n/8
// bytes of bitmap, so 64 views of a 1 M document table take 8 MB.
const statsCacheSize = 64

// maxCachedFreqs bounds the term document frequencies one cached view
// keeps; further terms are counted per search.
const maxCachedFreqs = 4096

// bitset is a set of slots.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int) { b[i>>6] |= 1 << (uint(i) & 63) }

func (b bitset) clear(i int) {
	if w := i >> 6; i >= 0 && w < len(b) {
		b[w] &^= 1 << (uint(i) & 63)
	}
}

func (b bitset) has(i int) bool {
	w := i >> 6
	return i >= 0 && w < len(b) && b[w]&(1<<(uint(i)&63)) != 0
}

// with returns b with slot i set, grown when i is past its end.
func (b bitset) with(i int) bitset {
	for i>>6 >= len(b) {
		b = append(b, 0)
	}
	b.set(i)
	return b
}

// viewStats is the part of a statsView that depends only on the caller's
// visibility and the table's contents, shared by the searches of callers
// of the same visibility. A write updates the cached ones in place
// (statsCache.update) under the engine's exclusive lock; searches read
// them under the shared lock.
type viewStats struct {
	visible bitset // nil when the caller sees every live document
	docs    float64
	avgLen  map[string]float64

	// What docs and avgLen are finished from (table.finishView) when
	// visible is set: the visible documents, those of them with content
	// and their total field lengths, as computeViewStats counts them.
	live, withContent int
	lens              [numLenFields]int64

	mu    sync.Mutex
	freqs map[posTerm]uint64
	means map[int]*meanCache // by vector length (MeanContentVector)
}

// count adds (sign 1) or removes (sign -1) a visible record's share of
// the view's counts, as computeViewStats counts it.
func (s *viewStats) count(r *record, sign int) {
	s.live += sign
	if r.hasLens && r.lens[lenExact] > 0 {
		s.withContent += sign
	}
	for j, n := range r.lens {
		s.lens[j] += int64(sign) * int64(n)
	}
}

func (s *viewStats) freq(key posTerm) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.freqs[key]
	return n, ok
}

// setFreq keeps key's count n, if the view has room; it reports whether
// it did.
func (s *viewStats) setFreq(key posTerm, n uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freqs == nil {
		s.freqs = map[posTerm]uint64{}
	}
	if len(s.freqs) < maxCachedFreqs {
		s.freqs[key] = n
		return true
	}
	return false
}

func (s *viewStats) hasFreqs() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.freqs) > 0
}

// docTerms are the terms of one version of a document's content, by index
// field, as the index holds them (the keys of each field's analysis).
// known is false when they could not be had.
type docTerms struct {
	known  bool
	fields map[string]index.TokenFrequencies
}

func (d *docTerms) has(k posTerm) bool {
	_, ok := d.fields[k.field][k.term]
	return ok
}

// termChange is what a write tells the statistics views about the terms
// of the document it replaces (old) and writes (new). same: the content
// did not change, so neither did its terms (old and new then need not be
// known). A nil *termChange knows nothing.
type termChange struct {
	same     bool
	old, new docTerms

	// The terms of old and new that some view may count (statsCache.seen),
	// found once per write (hits) for every view to look up.
	found            bool
	oldHits, newHits []posTerm
}

// hits fills ch.oldHits and ch.newHits (once) with the known terms of the
// old and new content that are in seen.
func (ch *termChange) hits(seen map[posTerm]struct{}) {
	if ch.found {
		return
	}
	ch.found = true
	of := func(d *docTerms) []posTerm {
		var out []posTerm
		for field, tf := range d.fields {
			for term := range tf {
				k := posTerm{field: field, term: term}
				if _, ok := seen[k]; ok {
					out = append(out, k)
				}
			}
		}
		return out
	}
	ch.oldHits, ch.newHits = of(&ch.old), of(&ch.new)
}

// adjustFreqs updates the cached term document frequencies of a view for
// a write of a document the view saw (oldVis) and/or sees (newVis), and
// returns the map lookups it spent. Only the document's terms some view
// may count are looked up (ch.hits: every key of s.freqs is in seen).
// Without the terms it needs, or when a count would go below zero (it
// never should), it drops the frequencies: they are counted again by the
// searches that need them.
func (s *viewStats) adjustFreqs(oldVis, newVis bool, ch *termChange, seen map[posTerm]struct{}) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.freqs) == 0 || oldVis && newVis && ch.same {
		return 0
	}
	if oldVis && !ch.old.known || newVis && !ch.new.known {
		s.freqs = nil
		return 0
	}
	ch.hits(seen)
	work := 0
	if newVis {
		work += len(ch.newHits)
	}
	if oldVis {
		work += len(ch.oldHits)
	}
	if len(s.freqs) <= work {
		// Fewer cached terms than terms to look up: check each.
		for k, n := range s.freqs {
			if newVis && ch.new.has(k) {
				n++
			}
			if oldVis && ch.old.has(k) {
				if n == 0 {
					work := len(s.freqs)
					s.freqs = nil
					return work
				}
				n--
			}
			s.freqs[k] = n
		}
		return len(s.freqs)
	}
	// Additions first, so that a count never dips below zero on the way.
	if newVis {
		for _, k := range ch.newHits {
			if n, ok := s.freqs[k]; ok {
				s.freqs[k] = n + 1
			}
		}
	}
	if oldVis {
		for _, k := range ch.oldHits {
			if n, ok := s.freqs[k]; ok {
				if n == 0 {
					s.freqs = nil
					return work
				}
				s.freqs[k] = n - 1
			}
		}
	}
	return work
}

// statsCache keeps the viewStats of the visibilities searched most
// recently (least recently used first out), each valid for the table
// generation it was computed or last updated at. A write updates every
// cached view (update) instead of discarding it, so that the first search
// of a group set after a write does not walk the table again. It is safe
// for concurrent use.
type statsCache struct {
	mu      sync.Mutex
	order   *list.List // of *statsEntry, most recent first
	entries map[string]*list.Element
	misses  int // views computed, for tests
	// writesInvalidate makes a write discard every view, as before views
	// were updated (for the side-by-side benchmark).
	writesInvalidate bool

	// seen holds every term any view counts (a superset: terms of views
	// discarded since stay until rebuildSeen), so that a write looks its
	// terms up once rather than once per view. Searches add to it under
	// the engine's shared lock (saw); writes read and rebuild it under the
	// exclusive one.
	seenMu  sync.Mutex
	seen    map[posTerm]struct{}
	seenCap int // len(seen) that triggers the next rebuild

	// work counts the term count lookups of the current batch of writes
	// (updateBudget).
	work int
}

// saw records that a view counts key (after setFreq kept it).
func (c *statsCache) saw(key posTerm) {
	c.seenMu.Lock()
	defer c.seenMu.Unlock()
	if c.seen == nil {
		c.seen = map[posTerm]struct{}{}
	}
	c.seen[key] = struct{}{}
}

// seenFloor is the size below which seen is not rebuilt (a variable for
// the tests, which rebuild it at every write).
var seenFloor = 4 * maxCachedFreqs

// rebuildSeen makes seen the terms the cached views count, when it has
// grown past seenCap (twice what it held after the last rebuild). The
// caller holds c.mu and the engine's exclusive lock (no saw runs).
func (c *statsCache) rebuildSeen() {
	c.seenMu.Lock()
	defer c.seenMu.Unlock()
	if len(c.seen) <= max(c.seenCap, seenFloor) {
		return
	}
	seen := map[posTerm]struct{}{}
	for el := c.order.Front(); el != nil; el = el.Next() {
		s := el.Value.(*statsEntry).stats
		s.mu.Lock()
		for k := range s.freqs {
			seen[k] = struct{}{}
		}
		s.mu.Unlock()
	}
	c.seen, c.seenCap = seen, 2*len(seen)
}

type statsEntry struct {
	key   string
	gen   uint64
	vis   func(*record) bool // what the view's caller sees
	stats *viewStats
}

func newStatsCache() *statsCache {
	return &statsCache{order: list.New(), entries: map[string]*list.Element{}}
}

// get returns the view of key at generation gen, if cached.
func (c *statsCache) get(key string, gen uint64) (*viewStats, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	ent := el.Value.(*statsEntry)
	if ent.gen != gen {
		c.order.Remove(el)
		delete(c.entries, key)
		return nil, false
	}
	c.order.MoveToFront(el)
	return ent.stats, true
}

// put records the view of key at generation gen; vis is its caller's
// visibility.
func (c *statsCache) put(key string, gen uint64, vis func(*record) bool, s *viewStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.misses++
	if el, ok := c.entries[key]; ok {
		ent := el.Value.(*statsEntry)
		if ent.gen > gen {
			return
		}
		ent.gen, ent.vis, ent.stats = gen, vis, s
		c.order.MoveToFront(el)
		return
	}
	c.entries[key] = c.order.PushFront(&statsEntry{key: key, gen: gen, vis: vis, stats: s})
	for c.order.Len() > statsCacheSize {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*statsEntry).key)
	}
}

// clear discards every view.
func (c *statsCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.entries)
}

// wantsTerms reports whether a write replacing r would need r's terms:
// some cached view that sees r keeps term frequencies. It is a hint (a
// view may start keeping them before the write lands; update then drops
// that view's frequencies).
func (c *statsCache) wantsTerms(r *record) bool {
	if r == nil || r.deleted {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writesInvalidate {
		return false
	}
	for el := c.order.Front(); el != nil; el = el.Next() {
		ent := el.Value.(*statsEntry)
		if ent.stats.visible != nil && ent.vis(r) && ent.stats.hasFreqs() {
			return true
		}
	}
	return false
}

// startBatch prepares the cached views for a batch of k writes to a
// table of n records: it resets the term count budget (updateBudget), and
// discards every view when updating each for each write would cost more
// than a fraction of a walk of the table (k × views > n/4, a bulk load):
// the views are then computed again when searched, as before writes
// updated them.
func (c *statsCache) startBatch(k, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.work = 0
	if k*c.order.Len() > max(maxCachedFreqs, n/4) {
		c.order.Init()
		clear(c.entries)
	}
}

// updateBudget bounds the term count lookups the updates of one batch of
// writes may spend, over every view, on a table of n records: about the
// cost of one walk of the table (a lookup in a view's counts costs about
// ten records of a walk). Past it, the views left drop their term counts
// (counted again by the searches that need them) instead of having them
// updated, so that a write holds the engine's lock no longer than a
// search that walks the table would.
func updateBudget(n int) int { return max(maxCachedFreqs, n/10) }

// update brings every cached view from table generation t.gen-1 to t.gen,
// for the write of new (at slot) over old (nil for a new document); t
// has accounted the write already. A view that cannot be updated (one
// that saw every live document and no longer does, as it would need a
// walk to list what it sees) is discarded.
func (c *statsCache) update(t *table, slot int32, old, new *record, ch *termChange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writesInvalidate {
		c.order.Init()
		clear(c.entries)
		return
	}
	if ch == nil {
		ch = &termChange{}
	}
	c.rebuildSeen()
	for el := c.order.Front(); el != nil; {
		next := el.Next()
		ent := el.Value.(*statsEntry)
		if ent.gen != t.gen-1 || !ent.apply(t, slot, old, new, ch, c.seen, &c.work) {
			c.order.Remove(el)
			delete(c.entries, ent.key)
		} else {
			ent.gen = t.gen
		}
		el = next
	}
}

// apply updates ent's view for one write (see update); false when it
// cannot.
func (ent *statsEntry) apply(t *table, slot int32, old, new *record, ch *termChange, seen map[posTerm]struct{}, work *int) bool {
	oldVis := old != nil && !old.deleted && ent.vis(old)
	newVis := !new.deleted && ent.vis(new)
	s := ent.stats
	if s.visible == nil {
		// The view sees every live document: it still does unless the
		// write adds one it does not see.
		if !new.deleted && !newVis {
			return false
		}
		ent.stats = t.wholeStats()
		return true
	}
	if oldVis {
		s.count(old, -1)
		s.visible.clear(int(slot))
	}
	if newVis {
		s.count(new, 1)
		s.visible = s.visible.with(int(slot))
	}
	if oldVis || newVis {
		if *work > updateBudget(len(t.recs)) {
			s.mu.Lock()
			s.freqs = nil
			s.mu.Unlock()
		} else {
			*work += s.adjustFreqs(oldVis, newVis, ch, seen)
		}
	}
	if !t.finishView(s) {
		ent.stats = t.wholeStats()
	}
	return true
}

// visibilityKey identifies what visibility(req) depends on: callers with
// equal keys see the same documents.
func visibilityKey(req *engine.Request) string {
	if req.Unrestricted {
		return "*"
	}
	var b strings.Builder
	b.WriteString("g")
	for _, g := range engine.SortedIDs(req.GroupIDs) {
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(g, 10))
	}
	return b.String()
}
