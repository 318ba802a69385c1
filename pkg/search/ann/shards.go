package ann

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Build returns a graph (of cfg's settings) over n vectors, vec(0) to
// vec(n-1), as Adding them in order would link them, except that the
// shards are built by up to workers goroutines at once: a shard's nodes
// link only within it, so shards are independent. A graph rebuilt from an
// index's vectors (a damaged or missing graph file) at 1 M vectors is ten
// shards of ~100 k adds at several milliseconds each: built one by one it
// takes as many core-hours as there are shards' worth of ~10 minutes.
//
// The level draws of each shard come from a stream of their own (seeded by
// cfg.Seed and the shard's number), so the graph is the same whatever
// workers is; it is not the graph New and Add would build (one stream).
// Adds after Build go on in its last shard.
func Build(dim, n int, vec func(id int32) []float32, cfg Config, workers int) *Graph {
	g := New(dim, vec, cfg)
	shard := g.shard
	if shard == 0 || n <= shard {
		for i := range int32(n) {
			g.Add(vec(i))
		}
		return g
	}
	parts := make([]*Graph, (n+shard-1)/shard)
	var next atomic.Int32
	var wg sync.WaitGroup
	for range max(1, min(workers, len(parts))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := int(next.Add(1)) - 1; s < len(parts); s = int(next.Add(1)) - 1 {
				base := int32(s * shard)
				p := New(dim, func(id int32) []float32 { return vec(base + id) }, Config{
					M: g.m, EfConstruction: g.efC, Shard: Unsharded, Seed: shardSeed(cfg.Seed, s), Recompute: g.recompute,
				})
				for i := range int32(min(shard, n-int(base))) {
					p.Add(vec(base + i))
				}
				parts[s] = p
			}
		}()
	}
	wg.Wait()
	if err := g.join(parts); err != nil {
		panic("ann: " + err.Error()) // parts built above are of the graph's settings
	}
	return g
}

// Join returns the graph of shards of size shard whose shard s is
// parts[s]: each part an unsharded graph (Config.Shard Unsharded) of the
// same dimension and M, all but the last of exactly shard nodes, its node
// i being the joined graph's node s·shard+i. vec is the joined graph's
// vectors (parts' vectors in order); the parts must not be used after.
// Shards built apart (in other processes, say) so make one graph, as
// Build does within one process.
func Join(dim int, vec func(id int32) []float32, cfg Config, parts ...*Graph) (*Graph, error) {
	g := New(dim, vec, cfg)
	if g.shard == 0 {
		return nil, errors.New("ann: Join needs a shard size")
	}
	if err := g.join(parts); err != nil {
		return nil, fmt.Errorf("ann: %w", err)
	}
	return g, nil
}

// shardSeed is the level draws' seed of shard s of a graph built by Build.
func shardSeed(seed uint64, s int) uint64 {
	return seed ^ (uint64(s)+1)*0x9e3779b97f4a7c15
}

// join appends parts, each an unsharded graph holding one full shard (the
// last possibly fewer nodes), to the empty graph g, their links renumbered
// by their shard's first node.
func (g *Graph) join(parts []*Graph) error {
	if len(g.level) != 0 {
		return errors.New("join into a graph with nodes")
	}
	n := 0
	for s, p := range parts {
		switch {
		case p.dim != g.dim || p.m != g.m || p.m0 != g.m0:
			return fmt.Errorf("shard %d: dimension or M differs", s)
		case p.shard != 0:
			return fmt.Errorf("shard %d: a graph of shards", s)
		case p.nDeleted != 0:
			return fmt.Errorf("shard %d: has deleted nodes", s)
		case len(p.level) > g.shard || len(p.level) < g.shard && s < len(parts)-1 || len(p.level) == 0:
			return fmt.Errorf("shard %d: %d nodes in shards of %d", s, len(p.level), g.shard)
		}
		n += len(p.level)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sqn = make([]float32, 0, n)
	g.level = make([]uint8, 0, n)
	g.links0 = make([]int32, 0, n*g.m0)
	g.upper = make([][]int32, 0, n)
	g.deleted = make([]uint64, (n+63)/64)
	renumber := func(ls []int32, base int32) {
		for i, x := range ls {
			if x >= 0 {
				ls[i] = x + base
			}
		}
	}
	for s, p := range parts {
		base := int32(s * g.shard)
		g.sqn = append(g.sqn, p.sqn...)
		g.level = append(g.level, p.level...)
		from := len(g.links0)
		g.links0 = append(g.links0, p.links0...)
		renumber(g.links0[from:], base)
		g.keepChoices(p, from, int(base))
		for _, up := range p.upper {
			renumber(up, base)
			g.upper = append(g.upper, up)
		}
		g.entries = append(g.entries, p.entries[0]+base)
		g.tops = append(g.tops, p.tops[0])
	}
	return nil
}

// keepChoices carries part p's layer-0 choices over to g, whose links0
// holds p's from place from and its nodes from node base: the links'
// distances and which of them the heuristic kept (linkDist, linkDiverse,
// selKnown), so that Adds after a join shrink a full list as cheaply as in
// the part (reverseLinks). Where p knows none, neither does g.
func (g *Graph) keepChoices(p *Graph, from, base int) {
	if g.recompute {
		return
	}
	g.linkDist.copyFrom(&p.linkDist, base, len(p.level))
	g.growChoiceBits()
	for i := range min(len(p.links0), len(p.linkDiverse)*64) {
		if p.linkDiverse[i>>6]&(1<<(i&63)) != 0 {
			at := from + i
			g.linkDiverse[at>>6] |= 1 << (at & 63)
		}
	}
	for j := range min(len(p.level), len(p.selKnown)*64) {
		if p.selKnown[j>>6]&(1<<(j&63)) != 0 {
			at := base + j
			g.selKnown[at>>6] |= 1 << (at & 63)
		}
	}
}
