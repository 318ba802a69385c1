package ann

import (
	"bytes"
	"math"
	"testing"
)

// TestKeptLinkDistancesBuildTheSameGraph: a graph that keeps its layer-0
// links' distances (linkDist) is built, link for link, as one that
// computes them again at each shrinking (Config.Recompute, the build
// before 2026-11-27e), whether it is built in one go or read back or
// replayed part-way (the distances then not known until computed); and
// every distance it keeps is the link's distance to its node.
func TestKeptLinkDistancesBuildTheSameGraph(t *testing.T) {
	const dim, n, half = 64, 1200, 500
	docs, _ := hashCorpus(t, n, 0, dim, true)
	vec := func(id int32) []float32 { return docs[id] }
	readBack := func(t *testing.T, g *Graph, cfg Config) *Graph {
		r, err := ReadGraph(bytes.NewReader(graphBytes(t, g)), vec, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		name  string
		shard int // Config.Shard
		build func(t *testing.T, cfg Config) *Graph
	}{
		{"built in one go", 0, func(t *testing.T, cfg Config) *Graph {
			g := New(dim, vec, cfg)
			for _, v := range docs {
				g.Add(v)
			}
			return g
		}},
		{"read back part-way", 0, func(t *testing.T, cfg Config) *Graph {
			g := New(dim, vec, cfg)
			for _, v := range docs[:half] {
				g.Add(v)
			}
			g = readBack(t, g, cfg)
			for _, v := range docs[half:] {
				g.Add(v)
			}
			return g
		}},
		{"replayed part-way", 0, func(t *testing.T, cfg Config) *Graph {
			g := New(dim, vec, cfg)
			for _, v := range docs[:half] {
				g.Add(v)
			}
			r := readBack(t, g, cfg)
			for _, v := range docs[half : 2*half] {
				_, rec := g.AddLogged(v, nil)
				if err := r.Replay(rec); err != nil {
					t.Fatal(err)
				}
			}
			for _, v := range docs[2*half:] {
				r.Add(v)
			}
			return r
		}},
		// Shards of 30: every 30 nodes lists start empty and fill up by
		// appending (whose lists' bits are not known until computed).
		{"in shards of 30", 30, func(t *testing.T, cfg Config) *Graph {
			g := New(dim, vec, cfg)
			for _, v := range docs {
				g.Add(v)
			}
			return g
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Lists of 8 on layer 0: most full early. (A graph read back
			// draws its levels from the seed again: the two are built the
			// same way.)
			want := graphBytes(t, tc.build(t, Config{M: 4, Seed: 7, Shard: tc.shard, Recompute: true}))
			g := tc.build(t, Config{M: 4, Seed: 7, Shard: tc.shard})
			if !bytes.Equal(graphBytes(t, g), want) {
				t.Fatal("the graph differs from the one built computing the distances again")
			}
			known := 0
			for i, d := range g.linkDist {
				x := g.links0[i]
				if x < 0 || math.IsNaN(float64(d)) {
					continue
				}
				known++
				if node := int32(i / g.m0); d != g.ndist(node, x) {
					t.Fatalf("node %d keeps %g as its link %d's distance, which is %g", node, d, x, g.ndist(node, x))
				}
			}
			if known < len(g.links0)/2 {
				t.Errorf("%d of %d link distances known", known, len(g.links0))
			}
		})
	}
}
