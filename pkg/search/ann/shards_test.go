package ann

import (
	"bytes"
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
	var parts []*Graph
	for s := range 4 {
		base := int32(s * shard)
		p := New(256, func(id int32) []float32 { return docs[base+id] }, Config{Seed: shardSeed(7, s), Shard: Unsharded})
		for i := base; i < min(base+shard, int32(len(docs))); i++ {
			p.Add(docs[i])
		}
		parts = append(parts, p)
	}
	joined, err := Join(256, vec, cfg, parts...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(graphBytes(t, joined), want) {
		t.Fatal("Join of the shards built apart differs from Build")
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
		if i == 99 {
			break
		}
	}
	if !bytes.Equal(graphBytes(t, one), graphBytes(t, re)) {
		t.Fatal("after Build, Adds with the shards' kept choices make another graph than Adds recomputing them")
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
