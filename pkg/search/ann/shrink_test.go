package ann

import (
	"bytes"
	"math"
	"math/rand/v2"
	"runtime"
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
			for i, x := range g.links0 {
				d := g.linkDist.at(i)
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

// TestFirstAddAfterReadAllocatesWhatItTouches: the first Add to a graph
// read back allocates for the lists it changes, not for the whole graph.
// It used to copy links0 into a larger array and fill the writer's link
// distances for every node (8·2·M bytes a node and more in the copies of
// a growing array): about a second of the first single-document write
// after opening the 1 M dense index (issue 23).
func TestFirstAddAfterReadAllocatesWhatItTouches(t *testing.T) {
	const dim, n = 8, 20000
	rng := rand.New(rand.NewPCG(5, 6))
	docs := make([][]float32, n+1)
	for i := range docs {
		docs[i] = make([]float32, dim)
		for j := range docs[i] {
			docs[i][j] = float32(rng.NormFloat64())
		}
	}
	vec := func(id int32) []float32 { return docs[id] }
	cfg := Config{M: 4, EfConstruction: 32, Seed: 3}
	g := New(dim, vec, cfg)
	for _, v := range docs[:n] {
		g.Add(v)
	}
	r, err := ReadGraph(bytes.NewReader(graphBytes(t, g)), vec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r.Add(docs[n])
	runtime.ReadMemStats(&after)
	// The graph's own arrays: links0 is 4·m0 bytes a node (640 kB here);
	// filling the distances of every node allocated more than twice that,
	// and the search's visited marks take an eighth of it.
	whole := uint64(4 * r.m0 * n)
	if got := after.TotalAlloc - before.TotalAlloc; got > whole/2 {
		t.Errorf("the first Add after ReadGraph allocated %d bytes, the graph's links take %d", got, whole)
	}
	if held, most := r.linkDist.pagesHeld(), 2*r.m0+1; held > most {
		t.Errorf("%d pages of link distances allocated, want at most %d (one per list changed)", held, most)
	}
	g.Add(docs[n])
	if !bytes.Equal(graphBytes(t, r), graphBytes(t, g)) {
		t.Error("the graph read back and added to differs from the one added to in memory")
	}
}

// pagesHeld returns the number of pages of d allocated.
func (d *linkDists) pagesHeld() int {
	n := 0
	for _, p := range d.pages {
		if p != nil {
			n++
		}
	}
	return n
}
