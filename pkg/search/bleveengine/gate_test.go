package bleveengine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// TestFIFOGateAdmitsInOrder: a fifoGate's places go to those who asked
// first: with its one place taken, three callers queued one after another
// are admitted one at a time, in the order they came, each once the one
// before gave its place back; a caller whose context ends while it waits
// gets the context's error and leaves the queue.
func TestFIFOGateAdmitsInOrder(t *testing.T) {
	g := make(fifoGate, 1)
	ctx := context.Background()
	release, err := g.enter(ctx, 0) // the one place
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	admitted := make(chan int, n)
	proceed := make(chan struct{})
	for i := range n {
		go func() {
			r, err := g.enter(ctx, 0)
			if err != nil {
				admitted <- -1
				return
			}
			admitted <- i
			<-proceed
			r()
		}()
		waitParked(t, "bleveengine.fifoGate.enter(", i+1)
	}
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := g.enter(cctx, 0)
		gaveUp <- err
	}()
	waitParked(t, "bleveengine.fifoGate.enter(", n+1)
	cancel()
	wantCanceled(t, gaveUp, "a caller whose context ended")
	select {
	case i := <-admitted:
		t.Fatalf("caller %d admitted while the place was taken", i)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	for want := range n {
		if got := <-admitted; got != want {
			t.Fatalf("caller %d admitted %s, want caller %d", got, ordinal(want), want)
		}
		select {
		case i := <-admitted:
			t.Fatalf("caller %d admitted while caller %d held the place", i, want)
		case <-time.After(10 * time.Millisecond):
		}
		proceed <- struct{}{}
	}
}

// TestSearchesPassTheGate: a search (here a vector search that walks the
// graph) waits at searchGate while its places are taken, without holding
// the engine's lock (a write goes through meanwhile), finishes once a
// place is given back, with the results it has without the gate, and a
// search cancelled while it waits fails with its context's error.
func TestSearchesPassTheGate(t *testing.T) {
	c := newBlendCorpus(t, 3000)
	e := graphEngine(t, c.docs)
	defer func(old bool) { forceWalk = old }(forceWalk)
	forceWalk = true // 3,000 documents are scanned otherwise (walkPays)
	want := vectorSearch(t, e, c.queries[0], 10, "content", nil)
	search := func(ctx context.Context) ([]int64, error) {
		res, err := e.Search(ctx, engine.Request{
			Query:        queryOf(t, `{"where": {"vector": {"target": "content", "query": "q"}}, "options": {"vector_k": 10}, "limit": 10}`),
			QueryVector:  c.queries[0],
			Unrestricted: true,
		})
		var ids []int64
		for _, h := range res.Hits {
			ids = append(ids, h.ID)
		}
		return ids, err
	}

	defer func(g fifoGate) { searchGate = g }(searchGate)
	gate := make(fifoGate, 1)
	searchGate = gate
	release, err := gate.enter(context.Background(), 0) // its one place, taken
	if err != nil {
		t.Fatal(err)
	}
	held := true
	defer func() {
		if held { // a failure: the search waiting goes through before the engine closes
			release()
		}
	}()
	type done struct {
		ids []int64
		err error
	}
	finished := make(chan done, 1)
	go func() {
		ids, err := search(context.Background())
		finished <- done{ids, err}
	}()
	waitParked(t, "bleveengine.(*Engine).Search(", 1)
	wrote := make(chan error, 1)
	go func() {
		_, err := e.Upsert(context.Background(), []engine.Document{{ID: 900001, Rev: 1, Content: "written while a search waits"}})
		wrote <- err
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write waits for the search queued at the gate")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() {
		_, err := search(ctx)
		cancelled <- err
	}()
	waitParked(t, "bleveengine.(*Engine).Search(", 2)
	cancel()
	wantCanceled(t, cancelled, "a search cancelled at the gate")
	select {
	case <-finished:
		t.Fatal("a search finished while the gate's place was taken")
	case <-time.After(20 * time.Millisecond):
	}
	release()
	held = false
	d := <-finished
	if d.err != nil {
		t.Fatal(d.err)
	}
	if fmt.Sprint(d.ids) != fmt.Sprint(want) {
		t.Fatalf("the search found %v through the gate, %v without", d.ids, want)
	}
	if len(gate) != 0 {
		t.Fatalf("after the searches %d places are taken", len(gate))
	}
}

// TestGateLeaseEnds: a place entered with a lease goes to the next caller
// in the queue when the lease ends, though its holder has not given it
// back, and the holder's release afterwards gives back nothing (it does
// not take the next caller's place); a holder that gives its place back
// within the lease gives it once.
func TestGateLeaseEnds(t *testing.T) {
	g := make(fifoGate, 1)
	ctx := context.Background()
	overruns := gateOverruns.Load()
	first, err := g.enter(ctx, 30*time.Millisecond) // never given back in time
	if err != nil {
		t.Fatal(err)
	}
	admitted := make(chan func(), 1)
	go func() {
		r, err := g.enter(ctx, time.Hour)
		if err != nil {
			t.Error(err)
		}
		admitted <- r
	}()
	var second func()
	select {
	case second = <-admitted:
	case <-time.After(10 * time.Second):
		t.Fatal("the second caller still waits 10 s after the first one's lease of 30 ms ended")
	}
	if got := gateOverruns.Load() - overruns; got != 1 {
		t.Errorf("%d overruns counted, want 1", got)
	}
	first() // late: its place is already the second caller's
	if len(g) != 1 {
		t.Fatalf("after the first caller's late release %d places are taken, want 1 (the second caller's)", len(g))
	}
	second()
	if len(g) != 0 {
		t.Fatalf("after every release %d places are taken", len(g))
	}
	third, err := g.enter(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	third()
	third()
	if len(g) != 0 {
		t.Fatalf("a release called twice: %d places taken", len(g))
	}
	if got := gateOverruns.Load() - overruns; got != 1 {
		t.Errorf("%d overruns counted, want 1 (the releases in time count none)", got)
	}
}

// TestALongSearchGivesItsPlaceUp: a search that is still running when its
// lease at searchGate ends (here one held by testHookAdmitted) gives its
// place to the search queued behind it, which finishes meanwhile; without
// the lease two searches of seconds each would hold a 2-core machine's
// places and every other search would wait for them.
func TestALongSearchGivesItsPlaceUp(t *testing.T) {
	e := newTestEngine(t, "", Options{InMemory: true})
	if _, err := e.Upsert(context.Background(), []engine.Document{{ID: 1, Rev: 1, Content: "a long search and a short one"}}); err != nil {
		t.Fatal(err)
	}
	defer func(g fifoGate, lease time.Duration) { searchGate, gateLease, testHookAdmitted = g, lease, nil }(searchGate, gateLease)
	searchGate = make(fifoGate, 1)
	gateLease = 30 * time.Millisecond
	hold := make(chan struct{})
	held := make(chan struct{}, 1)
	first := true
	testHookAdmitted = func() { // the first search admitted runs "long"
		if first {
			first = false
			held <- struct{}{}
			<-hold
		}
	}
	search := func() error {
		_, err := e.Search(context.Background(), engine.Request{
			Query: queryOf(t, `{"where": {"fts": {"query": "search"}}}`), Unrestricted: true,
		})
		return err
	}
	long := make(chan error, 1)
	go func() { long <- search() }()
	<-held
	short := make(chan error, 1)
	go func() { short <- search() }()
	select {
	case err := <-short:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(hold)
		t.Fatal("a search still waits 10 s behind a long one whose lease of 30 ms ended")
	}
	close(hold)
	if err := <-long; err != nil {
		t.Fatal(err)
	}
	if len(searchGate) != 0 {
		t.Fatalf("after the searches %d places are taken", len(searchGate))
	}
}

// wantCanceled fails unless who, whose context was cancelled, reports
// context.Canceled on errs within 10 s.
func wantCanceled(t *testing.T, errs <-chan error, who string) {
	t.Helper()
	select {
	case err := <-errs:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v, want context.Canceled", who, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still waits", who)
	}
}

func ordinal(i int) string { return [...]string{"first", "second", "third"}[i] }

// waitParked waits until n goroutines are parked (in a select or a
// channel send) with frame in their stacks: a counter raised before the
// wait would not do, as the caller counted may not be queued yet when the
// next one starts, and the order they queue in is what is tested.
func waitParked(t *testing.T, frame string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); parked(frame) != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines parked in %s, want %d", parked(frame), frame, n)
		}
	}
}

func parked(frame string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if (strings.Contains(head, "[select") || strings.Contains(head, "[chan send")) && strings.Contains(g, frame) {
			count++
		}
	}
	return count
}
