package bleveengine

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"
)

// BenchmarkStartup measures the Open of a persisted index (issue 23:
// start-up of the search process ≤ 60 s at 1 M documents) and where its
// time goes, with the codes read from their files (codesfile.go) and
// quantised from the vector files as before, side by side: the index of
// BenchmarkVectorScale (DOCREPO_BENCH_DOCS documents, default 100,000;
// DOCREPO_BENCH_INDEX keeps it between runs, and an index written by
// another binary is opened as it is), opened once to settle it (a log
// left by a kill is replayed and checkpointed), then the first Open with
// codes files (none yet: it quantises them and its checkpoint writes
// them), then DOCREPO_STARTUP_ROUNDS rounds (default 3) of an Open
// quantising every code ("quantise") and one reading them ("read"),
// alternately. Each line: wall and CPU time, the phases (bleve index,
// vector index with its codes share, records) and the load average.
// DOCREPO_STARTUP_PROFILE=prefix writes a CPU profile of the first Open
// of each kind (prefix-quantise.pprof, prefix-read.pprof).
//
//	DOCREPO_BENCH_DOCS=100000 DOCREPO_BENCH_INDEX=/tmp/idx100k GOEXPERIMENT=simd nice -n 10 \
//	  go test ./search/bleveengine -run XXX -bench Startup -benchtime 1x -timeout 3h
func BenchmarkStartup(b *testing.B) {
	n, dir := largeBenchIndex(b)
	blend := benchBlend()
	gen := newScaleGen(b, blend)
	if err := loadScale(context.Background(), b, dir, n, gen, blend); err != nil {
		b.Fatal(err)
	}
	rounds := 3
	if s := os.Getenv("DOCREPO_STARTUP_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	profile := os.Getenv("DOCREPO_STARTUP_PROFILE")
	profiled := map[string]bool{}
	open := func(name string, persist bool) {
		old := persistCodes
		persistCodes = persist
		defer func() { persistCodes = old }()
		runtime.GC()
		if profile != "" && !profiled[name] && name != "settle" {
			profiled[name] = true
			f, err := os.Create(profile + "-" + name + ".pprof")
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				b.Fatal(err)
			}
			defer pprof.StopCPUProfile()
		}
		start, cpu0 := time.Now(), cpuTime()
		e, err := Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		wall, cpu := time.Since(start), cpuTime()-cpu0
		o := e.opened
		scaleLog(b, "%-9s Open of %d documents: %6.2f s wall %6.2f s CPU | index %5.2f s, vectors %5.2f s (codes %5.2f s: %d read, %d quantised), records %5.2f s | load %s",
			name, e.tab.live, wall.Seconds(), cpu.Seconds(), o.index.Seconds(), o.vectors.Seconds(), o.codes.Seconds(),
			o.codesLoaded, o.codesBuilt, o.records.Seconds(), loadAvg())
		if profile != "" {
			pprof.StopCPUProfile()
		}
		t0 := time.Now()
		e.bg.Wait()
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		if name == "first" {
			scaleLog(b, "          its checkpoint (codes written) and Close: %.2f s; codes files %.0f MiB", time.Since(t0).Seconds(), mib(codesBytes(dir)))
		}
	}
	b.ResetTimer()
	for range b.N {
		open("settle", false)
		open("first", true)
		for range rounds {
			open("quantise", false)
			open("read", true)
		}
	}
}

func codesBytes(dir string) uint64 {
	var n uint64
	paths, _ := filepath.Glob(filepath.Join(dir, vectorsDir, "*.codes"))
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			n += uint64(fi.Size())
		}
	}
	return n
}
