package bleveengine

import (
	"container/list"
	"strconv"
	"strings"
	"sync"

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

func (b bitset) has(i int) bool {
	w := i >> 6
	return i >= 0 && w < len(b) && b[w]&(1<<(uint(i)&63)) != 0
}

// viewStats is the part of a statsView that depends only on the caller's
// visibility and the table's contents, shared by the searches of callers
// of the same visibility between two writes.
type viewStats struct {
	visible bitset // nil when the caller sees every live document
	docs    float64
	avgLen  map[string]float64

	mu    sync.Mutex
	freqs map[posTerm]uint64
}

func (s *viewStats) freq(key posTerm) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.freqs[key]
	return n, ok
}

func (s *viewStats) setFreq(key posTerm, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freqs == nil {
		s.freqs = map[posTerm]uint64{}
	}
	if len(s.freqs) < maxCachedFreqs {
		s.freqs[key] = n
	}
}

// statsCache keeps the viewStats of the visibilities searched most
// recently (least recently used first out), each valid for the table
// generation it was computed at. It is safe for concurrent use.
type statsCache struct {
	mu      sync.Mutex
	order   *list.List // of *statsEntry, most recent first
	entries map[string]*list.Element
	misses  int // views computed, for tests
}

type statsEntry struct {
	key   string
	gen   uint64
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

// put records the view of key at generation gen.
func (c *statsCache) put(key string, gen uint64, s *viewStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.misses++
	if el, ok := c.entries[key]; ok {
		ent := el.Value.(*statsEntry)
		if ent.gen > gen {
			return
		}
		ent.gen, ent.stats = gen, s
		c.order.MoveToFront(el)
		return
	}
	c.entries[key] = c.order.PushFront(&statsEntry{key: key, gen: gen, stats: s})
	for c.order.Len() > statsCacheSize {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*statsEntry).key)
	}
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
