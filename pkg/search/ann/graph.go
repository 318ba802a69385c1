package ann

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// Config tunes a Graph. The zero value takes the defaults.
type Config struct {
	// M is the number of links a node keeps on the upper layers
	// (default DefaultM); layer 0 keeps 2·M.
	M int
	// EfConstruction is the breadth of the search that finds a new node's
	// neighbours (default DefaultEfConstruction): larger builds a better
	// graph, slower.
	EfConstruction int
	// Seed seeds the level draws (reproducible graphs for tests).
	Seed uint64
}

// The build settings a zero Config takes. A graph read back (ReadGraph)
// keeps the M and efConstruction it was built with (its file's header),
// whatever these are now.
const (
	DefaultM              = 16
	DefaultEfConstruction = 100
)

const maxLevels = 16

// Graph is an HNSW graph (Malkov and Yashunin) over int8-quantised
// vectors of one dimension. Nodes are numbered from 0 in the order they
// are added and never renumbered; a deleted node stays in the graph as a
// waypoint but is never a result.
//
// Concurrency: any number of Search calls run concurrently with each
// other and with one writer (Add, Delete, Undelete): a caller must not
// call the writer methods concurrently. Add finds a node's neighbours
// without locking (only the writer changes the graph) and then links it
// under the write lock, so searches wait only for the linking.
type Graph struct {
	dim     int
	m, m0   int
	efC     int
	ml      float64
	rng     *rand.Rand
	visited sync.Pool

	// vec returns node id's full-precision vector (the caller's store:
	// the engine's memory-mapped file); the graph keeps only links.
	vec func(id int32) []float32

	mu       sync.RWMutex
	sqn      []float32 // squared norm per node
	level    []uint8
	links0   []int32   // n·m0, -1 for an empty place
	upper    [][]int32 // per node: level·m links (layers 1..level), nil at level 0
	deleted  []uint64  // bit per node
	nDeleted int
	entry    int32 // -1 when empty
	top      int   // level of entry
}

// New returns an empty graph for vectors of dim values; vec returns the
// vector of a node added before (it must stay valid for the graph's
// life).
func New(dim int, vec func(id int32) []float32, cfg Config) *Graph {
	if cfg.M <= 0 {
		cfg.M = DefaultM
	}
	if cfg.EfConstruction <= 0 {
		cfg.EfConstruction = DefaultEfConstruction
	}
	return &Graph{
		dim: dim, vec: vec, m: cfg.M, m0: 2 * cfg.M, efC: cfg.EfConstruction,
		ml: 1 / math.Log(float64(cfg.M)), rng: rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)),
		entry: -1,
	}
}

// Config returns the graph's build settings (M and EfConstruction; not
// the seed).
func (g *Graph) Config() Config { return Config{M: g.m, EfConstruction: g.efC} }

// Dim returns the dimension of the graph's vectors.
func (g *Graph) Dim() int { return g.dim }

// Len returns the number of nodes, deleted ones included.
func (g *Graph) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.level)
}

// Deleted returns the number of deleted nodes.
func (g *Graph) Deleted() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.nDeleted
}

// IsDeleted reports whether node id is deleted.
func (g *Graph) IsDeleted(id int32) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.isDeleted(id)
}

func (g *Graph) isDeleted(id int32) bool { return g.deleted[id>>6]&(1<<(id&63)) != 0 }

// Delete marks node id deleted (it stays a waypoint).
func (g *Graph) Delete(id int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.isDeleted(id) {
		g.deleted[id>>6] |= 1 << (id & 63)
		g.nDeleted++
	}
}

// Undelete makes a deleted node a possible result again (a document
// restored with the vectors it had).
func (g *Graph) Undelete(id int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.isDeleted(id) {
		g.deleted[id>>6] &^= 1 << (id & 63)
		g.nDeleted--
	}
}

// QueryDist returns the squared distance of q to node id.
func (g *Graph) QueryDist(q *Query, id int32) float32 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.qdist(q, id)
}

func (g *Graph) qdist(q *Query, id int32) float32 {
	return max(0, q.norm+g.sqn[id]-2*q.dotF(g.vec(id)))
}

func (g *Graph) vdist(v []float32, vn float32, id int32) float32 {
	return max(0, vn+g.sqn[id]-2*dotF(v, g.vec(id)))
}

func (g *Graph) ndist(a, b int32) float32 {
	return g.vdist(g.vec(a), g.sqn[a], b)
}

// links returns the link places of node id on layer l.
func (g *Graph) links(id int32, l int) []int32 {
	if l == 0 {
		return g.links0[int(id)*g.m0 : (int(id)+1)*g.m0]
	}
	return g.upper[id][(l-1)*g.m : l*g.m]
}

// Add quantises v (of the graph's dimension), links it into the graph and
// returns its node id.
func (g *Graph) Add(v []float32) int32 {
	id, _ := g.add(v, false, nil)
	return id
}

// AddLogged is Add that also appends to dst a record of what the Add
// changed in the graph (the node's level and squared norm, its links, and
// the link lists of the neighbours it changed) and returns dst: Replay
// applies it to the graph as it was before this Add (read from a
// checkpoint written by WriteTo and the records logged after it) without
// computing a distance. A log of these records makes a graph durable
// between checkpoints (pkg/search/bleveengine).
func (g *Graph) AddLogged(v []float32, dst []byte) (int32, []byte) {
	return g.add(v, true, dst)
}

// addition is what one Add changes in the graph.
type addition struct {
	id      int32
	lvl     int
	vn      float32
	own     [][]int32 // own[l]: the new node's links on layer l
	changes []change
}

// change is a neighbour's new link list on a layer: appended says that it
// is the old list with the new node in its first free place.
type change struct {
	node     int32
	layer    int
	links    []int32
	appended bool
}

func (g *Graph) add(v []float32, log bool, dst []byte) (int32, []byte) {
	if len(v) != g.dim {
		panic("ann: vector of the wrong dimension")
	}
	vn := sqNorm(v)
	pdist := func(id int32) float32 { return g.vdist(v, vn, id) }
	lvl := min(int(-math.Log(1-g.rng.Float64())*g.ml), maxLevels-1)
	a := addition{id: int32(len(g.level)), lvl: lvl, vn: vn}

	// Find the neighbours on each layer and the neighbours' new link
	// lists, reading the graph without a lock: only this writer changes
	// it.
	if g.entry >= 0 {
		cur := g.entry
		curD := pdist(cur)
		for l := g.top; l > lvl; l-- {
			cur, curD = g.greedy(pdist, cur, curD, l)
		}
		eps := []cand{{id: cur, d: curD}}
		a.own = make([][]int32, min(lvl, g.top)+1)
		for l := min(lvl, g.top); l >= 0; l-- {
			found := g.layerSearch(pdist, eps, g.efC, l)
			maxLinks := g.m
			if l == 0 {
				maxLinks = g.m0
			}
			sel := g.selectHeuristic(found, maxLinks)
			a.own[l] = sel
			for _, nb := range sel {
				links, appended := g.reverseLinks(nb, l, a.id, v, vn, pdist(nb))
				a.changes = append(a.changes, change{node: nb, layer: l, links: links, appended: appended})
			}
			eps = found
		}
	}
	if log {
		dst = g.appendAddition(dst, &a)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.apply(&a)
	return a.id, dst
}

// apply links the new node of a into the graph. The caller holds the
// write lock.
func (g *Graph) apply(a *addition) {
	id, lvl := a.id, a.lvl
	g.sqn = append(g.sqn, a.vn)
	g.level = append(g.level, uint8(lvl))
	for range g.m0 {
		g.links0 = append(g.links0, -1)
	}
	var up []int32
	if lvl > 0 {
		up = make([]int32, lvl*g.m)
		for i := range up {
			up[i] = -1
		}
	}
	g.upper = append(g.upper, up)
	if int(id)>>6 >= len(g.deleted) {
		g.deleted = append(g.deleted, 0)
	}
	for l, sel := range a.own {
		copy(g.links(id, l), sel)
	}
	for _, c := range a.changes {
		dst := g.links(c.node, c.layer)
		if c.appended {
			dst[slices.Index(dst, -1)] = id
			continue
		}
		n := copy(dst, c.links)
		for i := n; i < len(dst); i++ {
			dst[i] = -1
		}
	}
	if g.entry < 0 || lvl > g.top {
		g.entry, g.top = id, lvl
	}
}

// reverseLinks returns node nb's links on layer l with the new node id
// (vector v, squared norm vn) at distance d added: appended when there is
// room, otherwise chosen among the links and the new node by the same
// heuristic as a new node's own links (HNSW's shrinking of a full
// neighbour list). Keeping merely the closest would drop a new node
// farther from nb than all of nb's links from every neighbour's list:
// an outlier (a one-sentence document among abstracts) would get no link
// pointing to it and no walk could reach it. appended reports the first
// case.
func (g *Graph) reverseLinks(nb int32, l int, id int32, v []float32, vn, d float32) ([]int32, bool) {
	cur := g.links(nb, l)
	out := make([]int32, 0, len(cur)+1)
	for _, x := range cur {
		if x >= 0 {
			out = append(out, x)
		}
	}
	if len(out) < len(cur) {
		return append(out, id), true
	}
	cs := make([]cand, 0, len(out)+1)
	for _, x := range out {
		cs = append(cs, cand{id: x, d: g.ndist(nb, x)})
	}
	cs = append(cs, cand{id: id, d: d})
	sortCands(cs)
	// The new node is not in the graph's arrays yet: its distances come
	// from v.
	between := func(a, b int32) float32 {
		switch id {
		case a:
			return g.vdist(v, vn, b)
		case b:
			return g.vdist(v, vn, a)
		}
		return g.ndist(a, b)
	}
	return g.selectBy(cs, len(cur), between), false
}

// selectHeuristic picks up to n of the candidates (sorted nearest first)
// by HNSW's heuristic: a candidate is kept only when it is nearer to the
// new node than to every candidate kept before it, so the links spread
// in different directions; the places left are filled with the nearest
// candidates passed over.
func (g *Graph) selectHeuristic(cs []cand, n int) []int32 {
	return g.selectBy(cs, n, g.ndist)
}

// selectBy is selectHeuristic with the distance between two candidates
// given by between.
func (g *Graph) selectBy(cs []cand, n int, between func(a, b int32) float32) []int32 {
	out := make([]int32, 0, n)
	var skipped []int32
	for _, c := range cs {
		if len(out) == n {
			break
		}
		good := true
		for _, o := range out {
			if between(c.id, o) < c.d {
				good = false
				break
			}
		}
		if good {
			out = append(out, c.id)
		} else {
			skipped = append(skipped, c.id)
		}
	}
	for _, s := range skipped {
		if len(out) == n {
			break
		}
		out = append(out, s)
	}
	return out
}

// greedy walks layer l from cur to the node nearest by dist.
func (g *Graph) greedy(dist func(int32) float32, cur int32, curD float32, l int) (int32, float32) {
	for changed := true; changed; {
		changed = false
		for _, nb := range g.links(cur, l) {
			if nb < 0 {
				break
			}
			if d := dist(nb); d < curD {
				cur, curD, changed = nb, d, true
			}
		}
	}
	return cur, curD
}

// layerSearch returns the ef nearest nodes to dist on layer l reachable
// from the entry points, deleted ones included, nearest first.
func (g *Graph) layerSearch(dist func(int32) float32, eps []cand, ef, l int) []cand {
	vis := g.visitSet(len(g.level))
	defer g.visited.Put(vis)
	var cands minHeap
	var res maxHeap
	for _, e := range eps {
		vis.mark(e.id)
		heap.Push(&cands, e)
		heap.Push(&res, e)
		if len(res) > ef {
			heap.Pop(&res)
		}
	}
	for len(cands) > 0 {
		c := heap.Pop(&cands).(cand)
		if len(res) >= ef && c.d > res[0].d {
			break
		}
		for _, nb := range g.links(c.id, l) {
			if nb < 0 {
				break
			}
			if vis.mark(nb) {
				continue
			}
			d := dist(nb)
			if len(res) < ef || d < res[0].d {
				heap.Push(&cands, cand{id: nb, d: d})
				heap.Push(&res, cand{id: nb, d: d})
				if len(res) > ef {
					heap.Pop(&res)
				}
			}
		}
	}
	out := []cand(res)
	sortCands(out)
	return out
}

// Result is a search result: a node and its squared distance.
type Result struct {
	ID   int32
	Dist float32
}

// SearchOptions bound a Search.
type SearchOptions struct {
	// Ef is the number of results wanted (at least 1).
	Ef int
	// Accept, when not nil, admits a node as a result (the filter); the
	// walk goes on through the others.
	Accept func(id int32) bool
	// MaxVisits stops the walk after that many distance computations (0:
	// no bound): a very selective filter is cheaper to answer by an exact
	// scan of the admitted nodes, which a caller does when the walk
	// returns fewer results than it needs.
	MaxVisits int
	// Group, when not nil, names the group of a node (a document, whose
	// passages are nodes): the results are then the Ef nearest groups,
	// each by its nearest admitted node, so that Ef counts groups and a
	// group's many nodes do not crowd others out of the results (nor end
	// the walk early).
	Group func(id int32) int32
	// Entries, when above 1, is the breadth of the search on layer 1
	// whose nodes all enter layer 0 (default: the one node a greedy
	// descent ends at).
	Entries int
	// Seeds, when not empty, are more nodes that enter layer 0 beside the
	// greedy descent's.
	Seeds []int32
}

// Search returns up to o.Ef nodes nearest to q that are neither deleted
// nor refused by o.Accept, nearest first, and the number of distances it
// computed. Layer 0 is walked as in HNSW's search, except that only
// admitted nodes enter the results: the walk keeps going through the
// others until o.Ef admitted nodes are found and no candidate is nearer
// than the farthest of them.
func (g *Graph) Search(q *Query, o SearchOptions) ([]Result, int) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.entry < 0 || len(q.v) != g.dim {
		return nil, 0
	}
	ef := max(o.Ef, 1)
	dist := func(id int32) float32 { return g.qdist(q, id) }
	cur := g.entry
	curD := dist(cur)
	visits := 1
	for l := g.top; l > 0; l-- {
		if l == 1 && o.Entries > 1 {
			break
		}
		cur, curD = g.greedy(dist, cur, curD, l)
	}
	entries := []cand{{id: cur, d: curD}}
	if o.Entries > 1 && g.top >= 1 {
		entries = g.layerSearch(dist, entries, o.Entries, 1)
	}
	for _, id := range o.Seeds {
		if id >= 0 && int(id) < len(g.level) && id != cur {
			entries = append(entries, cand{id: id, d: dist(id)})
			visits++
		}
	}
	ok := func(id int32) bool { return !g.isDeleted(id) && (o.Accept == nil || o.Accept(id)) }
	vis := g.visitSet(len(g.level))
	defer g.visited.Put(vis)
	var cands minHeap
	var res maxHeap
	// With groups, res holds a group's nearest node only: best maps a
	// group to its node's distance.
	var best map[int32]float32
	if o.Group != nil {
		best = make(map[int32]float32, 2*ef)
	}
	add := func(c cand) {
		if o.Group != nil {
			grp := o.Group(c.id)
			if d, seen := best[grp]; seen {
				if c.d >= d {
					return
				}
				best[grp] = c.d
				for i := range res {
					if o.Group(res[i].id) == grp {
						res[i] = c
						heap.Fix(&res, i)
						return
					}
				}
				return
			}
			best[grp] = c.d
		}
		heap.Push(&res, c)
		if len(res) > ef {
			drop := heap.Pop(&res).(cand)
			if o.Group != nil {
				delete(best, o.Group(drop.id))
			}
		}
	}
	for _, e := range entries {
		vis.mark(e.id)
		heap.Push(&cands, e)
		if ok(e.id) {
			add(e)
		}
	}
	for len(cands) > 0 {
		c := heap.Pop(&cands).(cand)
		if len(res) >= ef && c.d > res[0].d {
			break
		}
		if o.MaxVisits > 0 && visits >= o.MaxVisits {
			break
		}
		for _, nb := range g.links(c.id, 0) {
			if nb < 0 {
				break
			}
			if vis.mark(nb) {
				continue
			}
			d := dist(nb)
			visits++
			if len(res) < ef || d < res[0].d {
				heap.Push(&cands, cand{id: nb, d: d})
				if ok(nb) {
					add(cand{id: nb, d: d})
				}
			}
		}
	}
	out := []cand(res)
	sortCands(out)
	rs := make([]Result, len(out))
	for i, c := range out {
		rs[i] = Result{ID: c.id, Dist: c.d}
	}
	return rs, visits
}

// InDegrees returns, per node, the number of layer-0 link lists that
// hold it (diagnostics: a node no list holds is reached only as an entry
// point).
func (g *Graph) InDegrees() []int32 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	in := make([]int32, len(g.level))
	for _, x := range g.links0 {
		if x >= 0 {
			in[x]++
		}
	}
	return in
}

// cand is a node and its distance.
type cand struct {
	id int32
	d  float32
}

func less(a, b cand) bool { return a.d < b.d || a.d == b.d && a.id < b.id }

func sortCands(cs []cand) {
	slices.SortFunc(cs, func(a, b cand) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
}

type minHeap []cand

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return less(h[i], h[j]) }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(cand)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type maxHeap []cand

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return less(h[j], h[i]) }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(cand)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// visitSet marks the nodes a search has seen: an epoch per node, so a
// pooled set is cleared by bumping the epoch.
type visitSet struct {
	epoch uint32
	marks []uint32
}

func (g *Graph) visitSet(n int) *visitSet {
	v, _ := g.visited.Get().(*visitSet)
	if v == nil {
		v = &visitSet{}
	}
	if len(v.marks) < n {
		v.marks = append(v.marks, make([]uint32, n-len(v.marks)+n/4)...)
	}
	v.epoch++
	if v.epoch == 0 {
		clear(v.marks)
		v.epoch = 1
	}
	return v
}

// mark marks id and reports whether it was marked already.
func (v *visitSet) mark(id int32) bool {
	if v.marks[id] == v.epoch {
		return true
	}
	v.marks[id] = v.epoch
	return false
}
