package ann

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// graphBytes is the graph's file (WriteTo): equal files are equal graphs.
func graphBytes(t *testing.T, g *Graph) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := g.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A graph read from a checkpoint with the records of the Adds after it
// replayed is the graph that made them, byte for byte, and answers the
// same; a record cut anywhere, or one replayed out of turn, is refused
// and leaves the graph as it was.
func TestReplayedRecordsRebuildTheSameGraph(t *testing.T) {
	for _, shard := range []int{0, 250} {
		t.Run(fmt.Sprintf("shard %d", shard), func(t *testing.T) { testReplayedRecords(t, shard) })
	}
}

// testReplayedRecords is TestReplayedRecordsRebuildTheSameGraph for a
// graph of shards of shard nodes (0: the default, one shard at this
// size; 250: the checkpoint in shard 1, the records in shards 1 and 2).
func testReplayedRecords(t *testing.T, shard int) {
	docs, queries := hashCorpus(t, 700, 10, 64, true)
	vec := func(id int32) []float32 { return docs[id] }
	g := New(64, vec, Config{Seed: 7, Shard: shard})
	const ckpt = 400
	for _, v := range docs[:ckpt] {
		g.Add(v)
	}
	checkpoint := graphBytes(t, g)
	var recs [][]byte
	for i, v := range docs[ckpt:] {
		id, rec := g.AddLogged(v, nil)
		if int(id) != ckpt+i {
			t.Fatalf("AddLogged returned %d, want %d", id, ckpt+i)
		}
		recs = append(recs, rec)
	}
	want := graphBytes(t, g)

	r, err := ReadGraph(bytes.NewReader(checkpoint), vec, Config{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Replay(recs[1]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a record replayed out of turn: err = %v, want ErrCorrupt", err)
	}
	for i, rec := range recs {
		// Every cut of the last records is refused and changes nothing.
		if i >= len(recs)-3 {
			before := graphBytes(t, r)
			for cut := range len(rec) {
				if err := r.Replay(rec[:cut]); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("record %d cut at %d of %d bytes: err = %v, want ErrCorrupt", i, cut, len(rec), err)
				}
			}
			if !bytes.Equal(graphBytes(t, r), before) {
				t.Fatalf("refused cuts of record %d changed the graph", i)
			}
		}
		if err := r.Replay(rec); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if !bytes.Equal(graphBytes(t, r), want) {
		t.Fatal("the replayed graph differs from the graph that logged the records")
	}
	for _, q := range queries {
		a, _ := g.Search(NewQuery(q), SearchOptions{Ef: 20})
		b, _ := r.Search(NewQuery(q), SearchOptions{Ef: 20})
		if !slices.Equal(a, b) {
			t.Fatalf("search after replay differs:\n%v\n%v", a, b)
		}
	}
	// Adds after a replay go on from the replayed state.
	if id := r.Add(docs[0]); int(id) != len(docs) {
		t.Errorf("Add after replay returned %d, want %d", id, len(docs))
	}
}

// A replayed record that names a link beyond the graph is refused.
func TestReplayRefusesLinksOutOfRange(t *testing.T) {
	docs, _ := hashCorpus(t, 50, 0, 32, true)
	vec := func(id int32) []float32 { return docs[id] }
	g := New(32, vec, Config{Seed: 3})
	for _, v := range docs[:49] {
		g.Add(v)
	}
	before := graphBytes(t, g)
	_, rec := g.AddLogged(docs[49], nil)
	r, err := ReadGraph(bytes.NewReader(before), vec, Config{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	// The record's first own link (after kind, id 49, level, norm and the
	// layer count and link count) made to point at node 120.
	bad := slices.Clone(rec)
	at := 1 + 1 + 1 + 4 + 1 + 1
	bad[at] = 120
	if err := r.Replay(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a link to node 120 of 50: err = %v, want ErrCorrupt", err)
	}
	if !bytes.Equal(graphBytes(t, r), before) {
		t.Fatal("a refused record changed the graph")
	}
}
