package ann

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
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
	// Shard bounds the nodes one walk covers (default DefaultShard;
	// Unsharded for none): nodes are linked only to nodes of their own
	// shard (ids [s·Shard, (s+1)·Shard)), each shard has its own entry
	// point, and Search walks every shard and merges. A walk of one graph
	// loses recall@10 as the graph grows at a fixed breadth (blend-glove
	// vectors, M 16, efConstruction 100, breadth 400: 1.000 at 25 k, 0.996
	// at 100 k, 0.984 at 200 k), while two shards of 100 k walked at that
	// breadth each give 0.997 at 200 k (dense-shards-2026-11-27d.md): the
	// recall follows the shard's size, the cost the number of shards.
	Shard int
	// Recompute shrinks a full layer-0 neighbour list as graphs were
	// built before 2026-11-27e: its distances computed again and the
	// heuristic run over it whole, instead of from the distances and
	// choices kept (linkDist, linkDiverse; reverseLinks). The graph is
	// the same, link for link, for ~3 times the CPU per Add. It is kept
	// for benchmarks comparing the two (BenchmarkBuildRules,
	// BenchmarkDenseShrink) and is not written with the graph.
	Recompute bool
}

// Unsharded, as Config.Shard, puts every node in one shard (graphs
// written before shards, and the log records of their sets).
const Unsharded = -1

// The build settings a zero Config takes. A graph read back (ReadGraph)
// keeps the M and efConstruction it was built with (its file's header),
// whatever these are now.
const (
	DefaultM              = 16
	DefaultEfConstruction = 100
	DefaultShard          = 100000
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
	dim       int
	m, m0     int
	efC       int
	recompute bool
	ml        float64
	rng       *rand.Rand
	visited   sync.Pool

	// vec returns node id's full-precision vector (the caller's store:
	// the engine's memory-mapped file); the graph keeps only links.
	vec func(id int32) []float32

	mu     sync.RWMutex
	sqn    []float32 // squared norm per node
	level  []uint8
	links0 []int32 // n·m0, -1 for an empty place
	// linkDist holds, for each place of links0, the squared distance of
	// the link to its node, NaN when not known (a graph read back,
	// joined or replayed: the distances are not written; they are
	// computed when a list is next shrunk). Only the writer reads and
	// writes it, in pages allocated as distances are recorded
	// (linkDists). It spares the shrinking of a full list (reverseLinks)
	// computing 2·M distances again: 4·2·M bytes per node (128 B at M
	// 16) once its page is written.
	linkDist linkDists
	// linkDiverse has a bit per place of links0: the link is one the
	// heuristic keeps for its own sake (it is nearer to its node than to
	// every such link nearer to the node: the first part of selectBy's
	// choice) rather than to fill a place; selKnown, a bit per node: its
	// list's bits are known. A list whose bits and distances are known
	// is shrunk without computing a distance between two of its links
	// unless the new node pushes one of them out (reverseLinks). Writer
	// only, like linkDist: 4 B per node at M 16, and a bit.
	linkDiverse []uint64
	selKnown    []uint64
	upper       [][]int32 // per node: level·m links (layers 1..level), nil at level 0
	deleted     []uint64  // bit per node
	nDeleted    int
	// shard is the number of nodes per shard (0: one shard of all);
	// entries and tops hold each shard's entry point (its first node of
	// the highest level) and that level.
	shard   int
	entries []int32
	tops    []int
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
	shard := cfg.Shard
	switch {
	case shard == 0:
		shard = DefaultShard
	case shard < 0:
		shard = 0
	}
	return &Graph{
		dim: dim, vec: vec, m: cfg.M, m0: 2 * cfg.M, efC: cfg.EfConstruction, recompute: cfg.Recompute,
		ml: 1 / math.Log(float64(cfg.M)), rng: rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)),
		shard: shard, linkDist: linkDists{m0: 2 * cfg.M},
	}
}

// Config returns the graph's build settings (M, EfConstruction and
// Shard; not the seed).
func (g *Graph) Config() Config {
	shard := g.shard
	if shard == 0 {
		shard = Unsharded
	}
	return Config{M: g.m, EfConstruction: g.efC, Shard: shard, Recompute: g.recompute}
}

// Shards returns the number of shards holding nodes.
func (g *Graph) Shards() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.entries)
}

// shardOf returns the shard of node id.
func (g *Graph) shardOf(id int32) int {
	if g.shard == 0 {
		return 0
	}
	return int(id) / g.shard
}

// entryOf returns shard s's entry point and its level (-1 and 0 when the
// shard has no node).
func (g *Graph) entryOf(s int) (int32, int) {
	if s >= len(g.entries) {
		return -1, 0
	}
	return g.entries[s], g.tops[s]
}

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
	return sqDist(q.norm, g.sqn[id], q.dotF(g.vec(id)))
}

func (g *Graph) vdist(v []float32, vn float32, id int32) float32 {
	return sqDist(vn, g.sqn[id], dotF(v, g.vec(id)))
}

// sqDist is the squared distance of two vectors from their squared norms
// and their dot product (for a code, its scale times the code's dot): at
// least 0, which rounding can go below. The SIMD kernels compute it so
// in their registers (codes_simd.go, codes_avx2.go).
func sqDist(an, bn, dot float32) float32 { return max(0, an+bn-2*dot) }

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
	id  int32
	lvl int
	vn  float32
	own [][]int32 // own[l]: the new node's links on layer l
	// ownDist: the distances of own[0]'s links (nil: not known, as in
	// a replayed record).
	ownDist []float32
	// ownDiverse: the number of own[0]'s first links the heuristic kept
	// for their own sake (-1: not known).
	ownDiverse int
	changes    []change
}

// change is a neighbour's new link list on a layer: appended says that it
// is the old list with the new node in its first free place.
type change struct {
	node     int32
	layer    int
	links    []int32
	appended bool
	// dists: on layer 0, the distances of links to node (nil: not
	// known); appended, the new node's alone. diverse: the number of
	// the first links kept for their own sake (-1: not known).
	dists   []float32
	diverse int
}

func (g *Graph) add(v []float32, log bool, dst []byte) (int32, []byte) {
	if len(v) != g.dim {
		panic("ann: vector of the wrong dimension")
	}
	vn := sqNorm(v)
	pdist := func(id int32) float32 { return g.vdist(v, vn, id) }
	lvl := min(int(-math.Log(1-g.rng.Float64())*g.ml), maxLevels-1)
	a := addition{id: int32(len(g.level)), lvl: lvl, vn: vn, ownDiverse: -1}

	// Find the neighbours on each layer and the neighbours' new link
	// lists, reading the graph without a lock: only this writer changes
	// it. The walk starts at the entry of the new node's shard, so it
	// meets (and links) nodes of that shard only.
	if entry, top := g.entryOf(g.shardOf(a.id)); entry >= 0 {
		cur := entry
		curD := pdist(cur)
		for l := top; l > lvl; l-- {
			cur, curD = g.greedy(pdist, cur, curD, l)
		}
		eps := []cand{{id: cur, d: curD}}
		a.own = make([][]int32, min(lvl, top)+1)
		// The new node's distances to the nodes its searches met, so that
		// its neighbours' shrinking does not compute them again.
		known := make(map[int32]float32, 2*g.efC)
		between := func(x, y int32) float32 {
			switch a.id {
			case x:
				x = y
				fallthrough
			case y:
				d, ok := known[x]
				if !ok {
					d = pdist(x)
					known[x] = d
				}
				return d
			}
			return g.ndist(x, y)
		}
		for l := min(lvl, top); l >= 0; l-- {
			found := g.layerSearch(pdist, eps, g.efC, l)
			maxLinks := g.m
			if l == 0 {
				maxLinks = g.m0
			}
			sel, diverse := g.selectBy(found, maxLinks, between)
			a.own[l] = sel
			for _, c := range found {
				known[c.id] = c.d
			}
			if l == 0 {
				a.ownDiverse = diverse
				a.ownDist = make([]float32, len(sel))
				for i, x := range sel {
					a.ownDist[i] = known[x]
				}
			}
			for _, nb := range sel {
				a.changes = append(a.changes, g.reverseLinks(nb, l, a.id, between))
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
	if !g.recompute {
		// The distances of the new node's and the changed lists' links
		// (NaN where not known).
		g.growChoiceBits()
		if a.ownDist != nil {
			copy(g.linkDist.forWrite(id), a.ownDist)
		}
		g.noteDiverse(id, a.ownDiverse)
	}
	for _, c := range a.changes {
		dst := g.links(c.node, c.layer)
		dists := c.layer == 0 && !g.recompute
		if c.appended {
			i := slices.Index(dst, -1)
			dst[i] = id
			if dists {
				// A page is allocated only for a known distance.
				if len(c.dists) > 0 {
					g.linkDist.forWrite(c.node)[i] = c.dists[0]
				} else if dd := g.linkDist.of(c.node); dd != nil {
					dd[i] = float32(math.NaN())
				}
				g.noteDiverse(c.node, -1)
			}
			continue
		}
		n := copy(dst, c.links)
		for i := n; i < len(dst); i++ {
			dst[i] = -1
		}
		if dists {
			g.linkDist.forget(c.node)
			if c.dists != nil {
				copy(g.linkDist.forWrite(c.node), c.dists)
			}
			g.noteDiverse(c.node, c.diverse)
		}
	}
	g.noteEntry(id, lvl)
}

// growChoiceBits extends linkDiverse and selKnown to every node, in one
// step (a graph read back has none: the first Add grows them whole).
func (g *Graph) growChoiceBits() {
	if n := (len(g.links0)+63)/64 - len(g.linkDiverse); n > 0 {
		g.linkDiverse = append(g.linkDiverse, make([]uint64, n)...)
	}
	if n := (len(g.level)+63)/64 - len(g.selKnown); n > 0 {
		g.selKnown = append(g.selKnown, make([]uint64, n)...)
	}
}

// noteDiverse records that the first k links of node id's layer-0 list
// are the ones the heuristic keeps for their own sake (k < 0: not known).
func (g *Graph) noteDiverse(id int32, k int) {
	if k < 0 {
		g.selKnown[id>>6] &^= 1 << (id & 63)
		return
	}
	g.selKnown[id>>6] |= 1 << (id & 63)
	base := int(id) * g.m0
	for i := range g.m0 {
		p := base + i
		if i < k {
			g.linkDiverse[p>>6] |= 1 << (p & 63)
		} else {
			g.linkDiverse[p>>6] &^= 1 << (p & 63)
		}
	}
}

// noteEntry makes node id (of level lvl) its shard's entry point when it
// is the shard's first node or above the shard's entry: a shard's entry is
// its first node of its highest level (ReadGraph finds it again so).
func (g *Graph) noteEntry(id int32, lvl int) {
	sh := g.shardOf(id)
	for len(g.entries) <= sh {
		g.entries = append(g.entries, -1)
		g.tops = append(g.tops, 0)
	}
	if g.entries[sh] < 0 || lvl > g.tops[sh] {
		g.entries[sh], g.tops[sh] = id, lvl
	}
}

// reverseLinks returns the change to node nb's links on layer l that
// links the new node id to it (between: the distance of two nodes, the
// new one's included): the new node appended when there is room,
// otherwise the links and the new node chosen again by the same
// heuristic as a new node's own links (HNSW's shrinking of a full
// neighbour list). Keeping merely the closest would drop a new node
// farther from nb than all of nb's links from every neighbour's list: an
// outlier (a one-sentence document among abstracts) would get no link
// pointing to it and no walk could reach it.
//
// A profile of a build put 61-67 % of its CPU here: for each neighbour,
// 2·M distances to its links and up to O(M²) between them. On layer 0
// they are mostly spared: nb's distances to its links are those kept in
// linkDist (computed only where not known), and when the list's choice is
// known (linkDiverse) reselect replays the heuristic computing only the
// new node's distances (most known from its layer's search) and those a
// link it pushes out makes necessary. The change carries the new list's
// distances and choice. Same graph, ~3 times less CPU per Add
// (graph-build-2026-11-27e.md), for 4·2·M bytes and 2·M bits per node.
func (g *Graph) reverseLinks(nb int32, l int, id int32, between func(a, b int32) float32) change {
	cur := g.links(nb, l)
	var kept []float32
	if l == 0 && !g.recompute {
		kept = g.linkDist.of(nb)
	}
	d := between(nb, id)
	out := make([]int32, 0, len(cur)+1)
	for _, x := range cur {
		if x >= 0 {
			out = append(out, x)
		}
	}
	if len(out) < len(cur) {
		return change{node: nb, layer: l, links: append(out, id), appended: true, dists: []float32{d}}
	}
	known := kept != nil && g.selKnown[nb>>6]&(1<<(nb&63)) != 0
	cs := make([]cand, 0, len(out)+1)
	div := make([]bool, 0, len(out)+1) // by cs's places
	for i, x := range out {
		c := cand{id: x}
		if kept != nil && !math.IsNaN(float64(kept[i])) {
			c.d = kept[i]
		} else {
			c.d = between(nb, x)
			known = false
		}
		cs = append(cs, c)
		if known {
			p := int(nb)*g.m0 + i
			div = append(div, g.linkDiverse[p>>6]&(1<<(p&63)) != 0)
		}
	}
	cs = append(cs, cand{id: id, d: d})
	div = append(div, false)
	if known {
		// Sort the bits along.
		order := make([]int, len(cs))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(i, j int) int { return cmpCands(cs[i], cs[j]) })
		scs, sdiv := make([]cand, len(cs)), make([]bool, len(cs))
		for i, o := range order {
			scs[i], sdiv[i] = cs[o], div[o]
		}
		cs, div = scs, sdiv
	} else {
		sortCands(cs)
	}
	var links []int32
	var diverse int
	if known {
		links, diverse = reselect(cs, div, id, len(cur), between)
	} else {
		links, diverse = g.selectBy(cs, len(cur), between)
	}
	ch := change{node: nb, layer: l, links: links}
	if l == 0 {
		ch.diverse = diverse
		ch.dists = make([]float32, len(ch.links))
		for i, x := range ch.links {
			ch.dists[i] = cs[slices.IndexFunc(cs, func(c cand) bool { return c.id == x })].d
		}
	}
	return ch
}

// reselect is selectBy over cs (sorted nearest first; all but the new
// node id a full list's links) given which links the heuristic keeps for
// their own sake in the list as it is (div, by cs's places): the links
// nearer than the new node keep their standing; the new node is tested
// against those kept before it; a link farther than it and kept is
// tested only against the kept ones the list did not keep (the new node,
// and those below), as the others did not hold it back before; a link
// farther and not kept stays out unless a kept one was pushed out, and is
// then tested as selectBy tests it. The result is selectBy's, link for link,
// for far fewer distances: a list's bits are what selectBy kept over the
// list alone, as the links it drops were never kept before a link it
// keeps.
func reselect(cs []cand, div []bool, id int32, n int, between func(a, b int32) float32) ([]int32, int) {
	out := make([]int32, 0, n)
	var skipped []int32
	// extra: the kept links that the list did not keep (the new node,
	// and links a pushed-out one no longer holds back).
	var extra []int32
	after, pushed := false, false
	nearer := func(c cand, os []int32) bool {
		for _, o := range os {
			if between(c.id, o) < c.d {
				return true
			}
		}
		return false
	}
	for i, c := range cs {
		if len(out) == n {
			break
		}
		var good bool
		switch {
		case c.id == id:
			after = true
			good = !nearer(c, out)
		case !after:
			good = div[i]
		case div[i]:
			good = !nearer(c, extra)
			pushed = pushed || !good
		case !pushed:
			good = false
		default:
			good = !nearer(c, out)
		}
		if good {
			out = append(out, c.id)
			if c.id == id || !div[i] {
				extra = append(extra, c.id)
			}
		} else {
			skipped = append(skipped, c.id)
		}
	}
	return fillPlaces(out, skipped, n)
}

// selectHeuristic picks up to n of the candidates (sorted nearest first)
// by HNSW's heuristic: a candidate is kept only when it is nearer to the
// new node than to every candidate kept before it, so the links spread
// in different directions; the places left are filled with the nearest
// candidates passed over.
func (g *Graph) selectHeuristic(cs []cand, n int) []int32 {
	out, _ := g.selectBy(cs, n, g.ndist)
	return out
}

// selectBy is selectHeuristic with the distance between two candidates
// given by between; it also returns the number of the first links kept
// for their own sake (the rest fill places).
func (g *Graph) selectBy(cs []cand, n int, between func(a, b int32) float32) ([]int32, int) {
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
	return fillPlaces(out, skipped, n)
}

// fillPlaces returns the links the heuristic kept (out) followed by the
// nearest of those it passed over (skipped) up to n, and the number kept.
func fillPlaces(out, skipped []int32, n int) ([]int32, int) {
	k := len(out)
	for _, s := range skipped {
		if len(out) == n {
			break
		}
		out = append(out, s)
	}
	return out, k
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
	// Codes, when not nil, holds the graph's vectors quantised (node i is
	// its vector i) in ByVector layout: a dense query's walk then
	// computes its distances from the codes, approximately, instead of
	// from the full-precision vectors, and the results' distances are
	// the codes' (the caller re-ranks). A visit reads the query's tiles
	// of a vector's int8 codes (640 bytes for a short use query) instead
	// of 2.4 KB of a memory-mapped file in small pages. Ignored for a
	// sparse query, another layout, codes that do not hold every node,
	// or without a SIMD tiles kernel (walkOnCodes).
	Codes *Codes
}

// Search returns up to o.Ef nodes nearest to q that are neither deleted
// nor refused by o.Accept, nearest first, and the number of distances it
// computed. Layer 0 is walked as in HNSW's search, except that only
// admitted nodes enter the results: the walk keeps going through the
// others until o.Ef admitted nodes are found and no candidate is nearer
// than the farthest of them. A graph of several shards is walked so in
// each shard (in parallel, up to GOMAXPROCS at once; each within
// o.MaxVisits/shards, and the count returned is at least o.MaxVisits when
// one reached its bound), and the o.Ef nearest of their results (groups)
// are returned.
func (g *Graph) Search(q *Query, o SearchOptions) ([]Result, int) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if len(g.entries) == 0 || len(q.v) != g.dim {
		return nil, 0
	}
	if c := o.Codes; c != nil {
		if !walkOnCodes || q.sparse || c.layout != ByVector || c.dim != g.dim {
			o.Codes = nil
		} else {
			// Held for the whole walk: its shards' goroutines read the
			// codes without locking (a nested RLock could wait on a
			// writer).
			c.mu.RLock()
			defer c.mu.RUnlock()
			if len(c.scale) < len(g.level) {
				o.Codes = nil
			}
		}
	}
	ef := max(o.Ef, 1)
	ns := len(g.entries)
	if ns == 1 {
		out, visits, _ := g.searchShard(q, 0, ef, o, o.MaxVisits)
		return results(out), visits
	}
	budget := 0
	if o.MaxVisits > 0 {
		budget = (o.MaxVisits + ns - 1) / ns
	}
	outs := make([][]cand, ns)
	visits := make([]int, ns)
	full := make([]bool, ns)
	var next atomic.Int32
	var wg sync.WaitGroup
	for range min(ns, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := int(next.Add(1)) - 1; s < ns; s = int(next.Add(1)) - 1 {
				outs[s], visits[s], full[s] = g.searchShard(q, s, ef, o, budget)
			}
		}()
	}
	wg.Wait()
	total := 0
	for s := range ns {
		total += visits[s]
	}
	if slices.Contains(full, true) {
		total = max(total, o.MaxVisits)
	}
	all := slices.Concat(outs...)
	sortCands(all)
	if o.Group != nil {
		// A group's nodes may lie in two shards (a document's passages
		// straddling a boundary): its nearest counts.
		seen := make(map[int32]bool, len(all))
		kept := all[:0]
		for _, c := range all {
			if grp := o.Group(c.id); !seen[grp] {
				seen[grp] = true
				kept = append(kept, c)
			}
		}
		all = kept
	}
	return results(all[:min(ef, len(all))]), total
}

// walkOnCodes is whether SearchOptions.Codes is heeded: with a SIMD
// kernel for the codes' tiles, AVX-512 (codes_simd.go; 1 M blend-glove
// vectors: 29.9 → 23.3 ms of CPU per unfiltered search) or AVX2 and FMA
// (codes_avx2.go; BenchmarkWalkOnCodes, 100 k vectors of 1,380
// dimensions, as a CPU without AVX-512: a walk on the codes cost 1.7-3.8×
// less CPU than one on the memory-mapped floats with dotAVX2). Built
// without GOEXPERIMENT=simd, or on a CPU with neither, the walk stays on
// the vectors: the portable tiles kernel against the portable dot was
// measured only on this project's AVX-512 VM (kernel=go there: the codes
// cost 1.4-2× less too), not on a machine that would run them. Tests
// set it to walk on codes with the portable kernel.
var walkOnCodes = false

// walkAhead is how many of a node's unvisited links ahead a walk on codes
// asks for the codes of (searchShard). A variable: benchmarks compare.
var walkAhead = 4

// results converts candidates to results.
func results(cs []cand) []Result {
	rs := make([]Result, len(cs))
	for i, c := range cs {
		rs[i] = Result{ID: c.id, Dist: c.d}
	}
	return rs
}

// searchShard is Search in shard s, within budget distance computations
// (0: no bound): the ef nearest, sorted, the distances computed, and
// whether the budget stopped the walk. The caller holds the read lock.
func (g *Graph) searchShard(q *Query, s, ef int, o SearchOptions, budget int) ([]cand, int, bool) {
	dist := func(id int32) float32 { return g.qdist(q, id) }
	if c := o.Codes; c != nil {
		dist = func(id int32) float32 { return c.qdistLocked(q, id) }
	}
	entry, top := g.entryOf(s)
	if entry < 0 {
		return nil, 0, false
	}
	cur := entry
	curD := dist(cur)
	visits := 1
	for l := top; l > 0; l-- {
		cur, curD = g.greedy(dist, cur, curD, l)
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
	vis.mark(cur)
	heap.Push(&cands, cand{id: cur, d: curD})
	if ok(cur) {
		add(cand{id: cur, d: curD})
	}
	todo := make([]int32, 0, g.m0)
	for len(cands) > 0 {
		c := heap.Pop(&cands).(cand)
		if len(res) >= ef && c.d > res[0].d {
			break
		}
		if budget > 0 && visits >= budget {
			break
		}
		// The node's links not yet visited; walking on codes, the lines
		// of the one walkAhead links on are asked for (Codes.prefetch)
		// while the distances before it are computed: each is a few
		// scattered lines, and a visit otherwise waits for them.
		todo = todo[:0]
		for _, nb := range g.links(c.id, 0) {
			if nb < 0 {
				break
			}
			if !vis.mark(nb) {
				todo = append(todo, nb)
			}
		}
		if o.Codes != nil {
			for _, nb := range todo[:min(walkAhead, len(todo))] {
				o.Codes.prefetch(q, int(nb))
			}
		}
		for i, nb := range todo {
			if o.Codes != nil && i+walkAhead < len(todo) {
				o.Codes.prefetch(q, int(todo[i+walkAhead]))
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
	return out, visits, budget > 0 && visits >= budget
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

func sortCands(cs []cand) { slices.SortFunc(cs, cmpCands) }

func cmpCands(a, b cand) int {
	switch {
	case less(a, b):
		return -1
	case less(b, a):
		return 1
	}
	return 0
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
