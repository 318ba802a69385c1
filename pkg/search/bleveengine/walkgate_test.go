package bleveengine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// TestWalksAreAdmittedInOrder: a graph walk waits for a place at the gate
// (walkGate) and walks are admitted in the order they came: with the
// gate's one place taken, three vector searches started one after another
// finish only once it is given back, in the order they started, with the
// results they have without the gate; a search cancelled while it waits
// fails with its context's error and leaves the queue.
func TestWalksAreAdmittedInOrder(t *testing.T) {
	c := newBlendCorpus(t, 3000)
	e, err := Open("", Options{InMemory: true, VectorGraph: GraphAlways})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Upsert(context.Background(), c.docs); err != nil {
		t.Fatal(err)
	}
	defer func(old bool) { forceWalk = old }(forceWalk)
	forceWalk = true // 3,000 documents are scanned otherwise (walkPays)
	const n = 3
	var want [n][]int64
	for i := range n {
		want[i] = vectorSearch(t, e, c.queries[i], 10, "content", nil)
	}
	search := func(ctx context.Context, i int) ([]int64, error) {
		res, err := e.Search(ctx, engine.Request{
			Query:        queryOf(t, `{"where": {"vector": {"target": "content", "query": "q"}}, "options": {"vector_k": 10}, "limit": 10}`),
			QueryVector:  c.queries[i],
			Unrestricted: true,
		})
		var ids []int64
		for _, h := range res.Hits {
			ids = append(ids, h.ID)
		}
		return ids, err
	}
	waiting := func(w int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); walksWaiting.Load() != w; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d walks wait at the gate, want %d", walksWaiting.Load(), w)
			}
		}
	}

	defer func(g chan struct{}) { walkGate = g }(walkGate)
	gate := make(chan struct{}, 1)
	walkGate = gate
	gate <- struct{}{} // its one place, taken
	held := true
	defer func() {
		if held { // a failure: the searches waiting go through before the engine closes
			<-gate
		}
	}()
	type done struct {
		i   int
		ids []int64
		err error
	}
	finished := make(chan done, n)
	for i := range n {
		go func() {
			ids, err := search(context.Background(), i)
			finished <- done{i, ids, err}
		}()
		waiting(int64(i + 1))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() {
		_, err := search(ctx, 0)
		cancelled <- err
	}()
	waiting(n + 1)
	cancel()
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a search cancelled at the gate: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a search cancelled at the gate still waits")
	}
	waiting(n)
	select {
	case d := <-finished:
		t.Fatalf("search %d finished while the gate's place was taken", d.i)
	case <-time.After(50 * time.Millisecond):
	}
	<-gate // the place given back
	held = false
	for order := range n {
		d := <-finished
		if d.err != nil {
			t.Fatal(d.err)
		}
		if d.i != order {
			t.Fatalf("search %d finished %s, want search %d: not in the order they came", d.i, ordinal(order), order)
		}
		if fmt.Sprint(d.ids) != fmt.Sprint(want[d.i]) {
			t.Fatalf("search %d found %v through the gate, %v without", d.i, d.ids, want[d.i])
		}
	}
	if len(gate) != 0 || walksWaiting.Load() != 0 {
		t.Fatalf("after the searches: %d places taken, %d walks waiting", len(gate), walksWaiting.Load())
	}
}

func ordinal(i int) string { return [...]string{"first", "second", "third"}[i] }
