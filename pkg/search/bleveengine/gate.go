package bleveengine

import (
	"context"
	"runtime"
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
// counted: at most GOMAXPROCS searches run, each as wide as it is.
// gateSearches: benchmarks compare.
var (
	searchGate   = make(fifoGate, runtime.GOMAXPROCS(0))
	gateSearches = true
)

// fifoGate is a gate of cap places, given in the order they are asked
// for.
type fifoGate chan struct{}

// enter waits for a place, after those who came before, and returns the
// function that gives it back; or ctx's error when ctx ends first (the
// caller then has no place and leaves the queue).
func (g fifoGate) enter(ctx context.Context) (release func(), err error) {
	select {
	case g <- struct{}{}:
		return func() { <-g }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
