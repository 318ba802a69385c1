package bleveengine

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
)

// searchGate admits searches (Engine.Search) in the order they arrive,
// GOMAXPROCS at once: a channel's blocked senders are served first come,
// first served, and a search cancelled while it waits (its timeout
// included) leaves the queue. Without it, concurrent searches share the
// CPU as Go's scheduler runs their goroutines, which is not in the order
// they came (a new goroutine runs next on its processor; one preempted
// after 10 ms goes to the global queue), and a few wait for many others:
// at 1 M dense documents on 2 cores, 8 clients' searches of 0.6-15 ms of
// CPU on average had a p99 of 29-303 ms over the perf probe's 12 modes and
// two users, through the gate 2.5-76 ms; their p50 went up (metadata
// 2.3 -> 8.8 ms: the mean is the clients' count over the throughput,
// which the gate does not change)
// (dense-engine-1m-2026-11-28.md, BenchmarkScaleModes with
// DOCREPO_BENCH_COMPARE=searchgate). It replaced a gate around graph
// walks alone (2026-11-27g), which fixed the vector mode's tail only.
// One search's own goroutines (a walk's shards, a split scan) are not
// counted: at most GOMAXPROCS searches run, each as wide as it is, plus
// those that outlived their lease (gateLease).
// gateSearches: benchmarks compare.
var (
	searchGate   = make(fifoGate, runtime.GOMAXPROCS(0))
	gateSearches = true
)

// gateLease is how long a search keeps its place at searchGate. A search
// still running then gives its place to the next in the queue and goes on
// beside the admitted ones, sharing the CPU with them as it would without
// the gate. Without a lease, two searches of seconds each (a caller's
// pathological query) would hold both places of a 2-core machine and
// every other caller's search would wait for them, up to its timeout.
// The perf probe's searches take 0.6-15 ms of CPU on average at 1 M
// documents, so nearly all finish within their lease and keep the first
// come, first served order; gateOverruns counts those that did not.
var gateLease = 100 * time.Millisecond

// gateOverruns counts the searches that outlived their lease at
// searchGate (GateOverruns).
var gateOverruns atomic.Int64

// GateOverruns is how many searches of this process outlived their lease
// at the search gate (gateLease): a count that keeps rising means callers
// send searches that take longer than the lease, which then share the CPU
// with every other search instead of queueing (the search service exports
// it as docrepo_search_gate_overruns_total).
func GateOverruns() int64 { return gateOverruns.Load() }

// testHookAdmitted, when set (tests), is called by Engine.Search once the
// search has its place at searchGate.
var testHookAdmitted func()

// fifoGate is a gate of cap places, given in the order they are asked
// for.
type fifoGate chan struct{}

// enter waits for a place, after those who came before, and returns the
// function that gives it back; or ctx's error when ctx ends first (the
// caller then has no place and leaves the queue). With a lease > 0 the
// place is given back when the lease ends, if the caller has not given
// it back by then (release then does nothing); with 0 it is held until
// release.
func (g fifoGate) enter(ctx context.Context, lease time.Duration) (release func(), err error) {
	select {
	case g <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if lease <= 0 {
		return func() { <-g }, nil
	}
	var given atomic.Bool
	give := func() bool {
		if given.CompareAndSwap(false, true) {
			<-g
			return true
		}
		return false
	}
	t := time.AfterFunc(lease, func() {
		if give() {
			gateOverruns.Add(1)
		}
	})
	return func() {
		t.Stop()
		give()
	}, nil
}
