// Package memlimit gives a process the Go runtime's soft memory limit
// (runtime/debug.SetMemoryLimit) from a setting (DOCREPO_MEMORY_LIMIT of
// the search service).
//
// Why: with the default GOGC=100 the runtime lets the heap grow to twice
// what is live before it collects, and keeps what it freed for the next
// cycle, so a process whose live heap is large holds up to about twice it
// resident. The search service's live heap grows with the index (the
// embedded engine's table and vector codes, ~2.3 KB per document): at
// 830 k documents 2 GiB live was 4.0-4.5 GiB of resident memory. Under a
// soft limit the runtime collects earlier as the process nears it and
// returns freed memory to the system, so the resident memory stays near
// the limit while what is live is below it.
//
// A limit below what is live would make the runtime collect over and over
// (it gives the collector at most half the CPU then, and lets the heap
// pass the limit): the limit in force is therefore never less than
// Headroom times the live heap (Floor), checked after every collection,
// so a larger index costs memory rather than continuous collection.
//
// GOMEMLIMIT, the runtime's own variable, wins when it is set.
package memlimit

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
)

// Headroom is the least limit over the live heap: 1.25 lets the heap grow
// by a quarter of what is live between collections (GOGC=100 lets it
// double), so the collector runs at most about four times as often as
// without a limit.
const Headroom = 1.25

// Parse parses a size as GOMEMLIMIT writes one: a whole number of bytes
// with an optional unit B, KiB, MiB, GiB or TiB. "off" and "0" mean no
// limit (0).
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "off" || t == "0" {
		return 0, nil
	}
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("memlimit: %q is not a size (bytes, or a number with B, KiB, MiB, GiB or TiB; off for none)", s)
	}
	return n * mult, nil
}

// Floor returns the limit to keep in force: limit, or Headroom times live
// when that is more.
func Floor(limit, live int64) int64 {
	return max(limit, int64(float64(live)*Headroom))
}

// Apply sets the process's soft memory limit to limit bytes (0: none) and
// keeps it at least Floor of the live heap after each collection. When
// the GOMEMLIMIT environment variable is set (getenv), the runtime's
// limit from it is kept and nothing is changed. It returns the limit in
// force and where it came from ("GOMEMLIMIT", "setting", or "none"), and
// a function that stops following the live heap (the limit stays).
func Apply(limit int64, getenv func(string) string) (int64, string, func()) {
	if getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1), "GOMEMLIMIT", func() {}
	}
	if limit <= 0 {
		return 0, "none", func() {}
	}
	f := &follower{limit: limit}
	f.set(Floor(limit, liveHeap()))
	f.watch()
	return limit, "setting", f.stop
}

// follower keeps the limit at Floor of the live heap, checking after each
// collection (a finalizer on an unreachable object runs once per cycle).
type follower struct {
	mu      sync.Mutex
	limit   int64 // configured
	current int64 // in force
	stopped bool
}

func (f *follower) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
}

func (f *follower) set(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped && n != f.current {
		debug.SetMemoryLimit(n)
		f.current = n
	}
}

// watch arms a finalizer that runs after the next collection, adjusts the
// limit and arms itself again.
func (f *follower) watch() {
	sentinel := new([16]byte)
	runtime.SetFinalizer(sentinel, func(*[16]byte) {
		f.mu.Lock()
		stopped := f.stopped
		f.mu.Unlock()
		if stopped {
			return
		}
		f.set(Floor(f.limit, liveHeap()))
		f.watch()
	})
}

// liveHeap returns the heap the last collection found live.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// ContainerShare is the largest share of the container's memory limit the
// soft limit takes: the rest is for what the Go runtime does not count
// (thread stacks, the index's memory-mapped pages it dirties, cgo-free
// but off-heap buffers) before the kernel's OOM killer acts.
const ContainerShare = 0.9

// cgroupFiles are where the process's memory limit is: cgroup v2, then v1.
var cgroupFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// ContainerLimit returns the memory limit of the process's cgroup (a
// container's, as Kubernetes and Docker Compose set it), read through
// readFile, or 0 when there is none: no file, "max", or cgroup v1's
// "unlimited" of 2^63 rounded down to a page.
func ContainerLimit(readFile func(string) ([]byte, error)) int64 {
	for _, name := range cgroupFiles {
		b, err := readFile(name)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0
		}
		return n
	}
	return 0
}

// WithinContainer returns limit, lowered to ContainerShare of the
// container's memory limit when that is smaller; a limit of 0 (none) stays
// 0, since switching a limit on is the setting's choice.
func WithinContainer(limit, container int64) int64 {
	if limit <= 0 || container <= 0 {
		return limit
	}
	return min(limit, int64(float64(container)*ContainerShare))
}
