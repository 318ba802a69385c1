package ann

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"testing"
)

// Build builds a graph's shards at once and joins them: the graph is the
// same for any number of workers, it is the join of the shards built
// apart, it reads back from its file, links only within a shard, finds the
// exact nearest in every shard, and goes on growing by Add.
func TestBuildJoinsShardsBuiltAtOnce(t *testing.T) {
	const shard = 200
	docs, queries := hashCorpus(t, 700, 40, 256, true)
	vec := func(id int32) []float32 { return docs[id] }
	cfg := Config{Seed: 7, Shard: shard}
	one := Build(256, len(docs), vec, cfg, 1)
	g := Build(256, len(docs), vec, cfg, 3)
	want := graphBytes(t, one)
	if !bytes.Equal(graphBytes(t, g), want) {
		t.Fatal("Build with 3 workers differs from Build with 1")
	}
	// The shards built apart (Join takes them over: each call, new ones).
	shards := func() []*Graph {
		var parts []*Graph
		for s := range 4 {
			base := int32(s * shard)
			p := New(256, func(id int32) []float32 { return docs[base+id] }, Config{Seed: shardSeed(7, s), Shard: Unsharded})
			for i := base; i < min(base+shard, int32(len(docs))); i++ {
				p.Add(docs[i])
			}
			parts = append(parts, p)
		}
		return parts
	}
	parts := shards()
	joined, err := Join(256, vec, cfg, parts...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(graphBytes(t, joined), want) {
		t.Fatal("Join of the shards built apart differs from Build")
	}
	// The writer's kept distances and choices (never written) are the
	// shards': Join carries each shard's over to its nodes' new numbers.
	// A shard read back from its file knows none: neither does the join
	// for its nodes (the writer computes them again as it needs them).
	ref, fresh := shards(), shards()
	readBack, err := ReadGraph(bytes.NewReader(graphBytes(t, fresh[1])), func(id int32) []float32 { return docs[shard+id] }, Config{Shard: Unsharded})
	if err != nil {
		t.Fatal(err)
	}
	mixed, err := Join(256, vec, cfg, fresh[0], readBack, fresh[2], fresh[3])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(graphBytes(t, mixed), want) {
		t.Fatal("Join with a shard read back differs from Build")
	}
	if k := knownLists(readBack); k != 0 || knownLists(ref[0]) == 0 {
		t.Fatalf("a shard read back knows %d lists' choices, one built knows %d: want 0 and more", k, knownLists(ref[0]))
	}
	for name, b := range map[string]*Graph{"Build": one, "Join": joined, "Join with a shard read back": mixed} {
		for s, p := range ref {
			if b == mixed && s == 1 {
				p = readBack
			}
			if err := sameWriterState(p, b, s*shard); err != nil {
				t.Errorf("%s keeps other link distances or choices than shard %d: %v", name, s, err)
			}
		}
	}
	back, err := ReadGraph(bytes.NewReader(want), vec, Config{})
	if err != nil {
		t.Fatalf("the built graph does not read back: %v", err)
	}
	if back.Shards() != 4 || back.Len() != len(docs) {
		t.Fatalf("read back: %d shards, %d nodes; want 4, %d", back.Shards(), back.Len(), len(docs))
	}
	for id := range int32(len(docs)) {
		for l := 0; l <= int(g.level[id]); l++ {
			for _, x := range g.links(id, l) {
				if x >= 0 && x/shard != id/shard {
					t.Fatalf("node %d is linked to node %d of another shard on layer %d", id, x, l)
				}
			}
		}
	}
	var sum float64
	fromShard := make([]int, 4)
	for _, q := range queries {
		rs, _ := g.Search(NewQuery(q), SearchOptions{Ef: 100})
		got := rerank(docs, q, rs, 10)
		for _, id := range got {
			fromShard[id/shard]++
		}
		sum += recall(got, exactTop(docs, q, 10, nil))
	}
	if r := sum / float64(len(queries)); r < 0.97 {
		t.Errorf("recall@10 = %.3f, want >= 0.97", r)
	}
	for s, n := range fromShard {
		if n == 0 {
			t.Errorf("no result from shard %d: %v", s, fromShard)
		}
	}
	// The shards' kept link distances and choices come along: Adds after
	// Build make the graph that recomputing them all makes.
	re := Build(256, len(docs), vec, Config{Seed: 7, Shard: shard, Recompute: true}, 2)
	more0, _ := hashCorpus(t, 800, 0, 256, true)
	for i, v := range more0[700:] {
		docs = append(docs, v)
		one.Add(v)
		re.Add(v)
		mixed.Add(v)
		if i == 99 {
			break
		}
	}
	if !bytes.Equal(graphBytes(t, one), graphBytes(t, re)) {
		t.Fatal("after Build, Adds with the shards' kept choices make another graph than Adds recomputing them")
	}
	if !bytes.Equal(graphBytes(t, mixed), graphBytes(t, re)) {
		t.Fatal("after a Join with a shard read back, Adds make another graph than Adds recomputing every choice")
	}
	docs = docs[:700]
	// Adds go on in the last shard, then open a new one.
	more, _ := hashCorpus(t, 800, 0, 256, true)
	docs = append(docs, more[700:]...)
	for _, v := range docs[700:] {
		g.Add(v)
	}
	if g.Shards() != 4 || g.Len() != 800 {
		t.Fatalf("after 100 adds: %d shards, %d nodes; want 4, 800", g.Shards(), g.Len())
	}
	docs = append(docs, docs[5])
	g.Add(docs[800])
	if g.Shards() != 5 {
		t.Fatalf("node 800 opened no shard: %d shards", g.Shards())
	}
	for _, x := range g.links(750, 0) {
		if x >= 0 && (x < 600 || x >= 800) {
			t.Fatalf("node 750, added after Build, is linked to node %d outside its shard", x)
		}
	}
	if rs, _ := g.Search(NewQuery(docs[750]), SearchOptions{Ef: 10}); len(rs) == 0 || rs[0].ID != 750 {
		t.Errorf("node 750 added after Build is not its own nearest: %v", rs)
	}
}

func TestJoinRefusesPartsThatAreNotShards(t *testing.T) {
	docs, _ := hashCorpus(t, 300, 0, 64, true)
	part := func(from, to int, cfg Config) *Graph {
		p := New(64, func(id int32) []float32 { return docs[from+int(id)] }, cfg)
		for _, v := range docs[from:to] {
			p.Add(v)
		}
		return p
	}
	vec := func(id int32) []float32 { return docs[id] }
	tests := []struct {
		name  string
		parts []*Graph
		ok    bool
	}{
		{name: "full shards and a short last one", parts: []*Graph{part(0, 100, Config{Shard: Unsharded}), part(100, 150, Config{Shard: Unsharded})}, ok: true},
		{name: "a short shard before the last", parts: []*Graph{part(0, 90, Config{Shard: Unsharded}), part(90, 150, Config{Shard: Unsharded})}},
		{name: "a shard too big", parts: []*Graph{part(0, 120, Config{Shard: Unsharded})}},
		{name: "a part of shards", parts: []*Graph{part(0, 100, Config{Shard: 50})}},
		{name: "another M", parts: []*Graph{part(0, 100, Config{Shard: Unsharded, M: 8})}},
		{name: "an empty part", parts: []*Graph{part(0, 0, Config{Shard: Unsharded})}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Join(64, vec, Config{Shard: 100}, tc.parts...)
			if tc.ok != (err == nil) {
				t.Fatalf("Join: %v, want ok %v", err, tc.ok)
			}
			if err == nil && (g.Len() != 150 || g.Shards() != 2) {
				t.Errorf("joined %d nodes in %d shards, want 150 in 2", g.Len(), g.Shards())
			}
		})
	}
	if _, err := Join(64, vec, Config{Shard: Unsharded}); err == nil {
		t.Error("Join into an unsharded graph succeeded")
	}
}

// sameWriterState returns an error unless b keeps for its nodes from
// base the link distances (NaN: not known) and choices (linkDiverse, on
// the lists whose choice is known: selKnown) that part keeps for its own.
func sameWriterState(part, b *Graph, base int) error {
	bit := func(bs []uint64, i int) bool { return i>>6 < len(bs) && bs[i>>6]&(1<<(i&63)) != 0 }
	dist := func(g *Graph, p int) float32 { return g.linkDist.at(p) }
	for j := range part.level {
		id := base + j
		ka, kb := bit(part.selKnown, j), bit(b.selKnown, id)
		if ka != kb {
			return fmt.Errorf("node %d: choice known %v, want %v", id, kb, ka)
		}
		for i := range part.m0 {
			p, q := j*part.m0+i, id*b.m0+i
			da, db := dist(part, p), dist(b, q)
			if da != db && !(math.IsNaN(float64(da)) && math.IsNaN(float64(db))) {
				return fmt.Errorf("node %d, link %d: distance %v, want %v", id, i, db, da)
			}
			if ka && bit(part.linkDiverse, p) != bit(b.linkDiverse, q) {
				return fmt.Errorf("node %d, link %d: kept for its own sake %v, want %v", id, i, bit(b.linkDiverse, q), bit(part.linkDiverse, p))
			}
		}
	}
	return nil
}

// knownLists returns the number of g's nodes whose layer-0 choice is known.
func knownLists(g *Graph) int {
	n := 0
	for _, w := range g.selKnown {
		n += bits.OnesCount64(w)
	}
	return n
}
