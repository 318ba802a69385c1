package bleveengine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitIdle returns once the process has used less than 50 ms of CPU in
// half a second (scorch's merges go on after the last write), or after
// limit (0: no limit), reporting whether it was idle.
func waitIdle(limit time.Duration) bool {
	start := time.Now()
	for last := processCPU(); ; {
		time.Sleep(500 * time.Millisecond)
		now := processCPU()
		if now-last < 50*time.Millisecond {
			return true
		}
		if limit > 0 && time.Since(start) > limit {
			return false
		}
		last = now
	}
}

// BenchmarkIngestSmallBatches writes 20,000 documents the way the indexer
// does under an upload load (small batches, two in flight, the persister
// nap of `make run`) and reports the CPU per document including scorch's
// background merges, which run on after the last Upsert returns: the
// benchmark waits until the process is idle. Use it to tune the merge and
// persister settings (scorchConfig).
//
// DOCREPO_BENCH_BATCHES=64,256 writes the corpus once per batch size
// instead (20 alone by default), each into a fresh index, in that order
// and then in reverse, and reports the CPU per document of each write:
// what the size of the indexer's batches (the consumer's BatchSize, which
// a backlog fills) costs the search process. DOCREPO_BENCH_DOCS sets the
// corpus size (20,000).
//
//	DOCREPO_BENCH_BATCHES=64,256 DOCREPO_BENCH_DOCS=100000 go test \
//	./search/bleveengine -run XXX -bench IngestSmallBatches -benchtime 1x
func BenchmarkIngestSmallBatches(b *testing.B) {
	n := 20000
	if s := os.Getenv("DOCREPO_BENCH_DOCS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	sizes := []int{20}
	if s := os.Getenv("DOCREPO_BENCH_BATCHES"); s != "" {
		sizes = sizes[:0]
		for _, f := range strings.Split(s, ",") {
			k, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || k <= 0 {
				b.Fatalf("DOCREPO_BENCH_BATCHES: %q is no batch size", f)
			}
			sizes = append(sizes, k)
		}
		// Each size twice, the second time in reverse order: a drift of
		// the machine's speed shows as a difference between the rounds.
		for i := len(sizes) - 1; i >= 0; i-- {
			sizes = append(sizes, sizes[i])
		}
	}
	c := genCorpus(b, n, true)
	for range b.N {
		for _, batch := range sizes {
			cpu := ingestInBatches(b, c.docs, batch)
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(c.docs)), fmt.Sprintf("cpu-ms/doc@%d", batch))
		}
	}
}

// ingestInBatches writes docs into a fresh index in batches of the given
// size, two in flight, and returns the process's CPU until it is idle
// again (the merges included).
func ingestInBatches(b *testing.B, docs []engine.Document, batch int) time.Duration {
	e, err := Open(filepath.Join(b.TempDir(), "idx"), Options{PersistNap: 20 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	cpu0, t0 := processCPU(), time.Now()
	next := make(chan []engine.Document)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for docs := range next {
				if _, err := e.Upsert(context.Background(), docs); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for i := 0; i < len(docs); i += batch {
		next <- docs[i:min(len(docs), i+batch)]
	}
	close(next)
	wg.Wait()
	upserts := time.Since(t0)
	upsertCPU := processCPU() - cpu0
	waitIdle(0)
	cpu := processCPU() - cpu0
	b.Logf("%d documents in batches of %d: upserts took %v (%.0f docs/s), CPU %v (%.3f ms/doc) of which %v after the last upsert; load %s",
		len(docs), batch, upserts.Round(time.Millisecond), float64(len(docs))/upserts.Seconds(), cpu.Round(time.Millisecond),
		float64(cpu.Microseconds())/1000/float64(len(docs)), (cpu - upsertCPU).Round(time.Millisecond), loadAvg())
	return cpu
}

// BenchmarkPairFieldWrite measures what the pair field (format 4) costs a
// write: the scale benchmark's documents (scaleGen: 60-120 Zipf words,
// hash vectors) written in batches of 1,000 into a fresh index without and
// with the pair field, alternately (two rounds each), with the CPU per
// document of the upserts and including the merges that follow (waited
// for up to 30 s), and the disk per document of the bleve index (the
// vector files apart, unchanged).
//
// DOCREPO_BENCH_FIELD=window compares the window pairs (format 5) instead:
// without them and with them, C growing as the index does (from 25,000
// documents on); DOCREPO_BENCH_COMMON_TERMS=K starts C with the K most
// frequent words of the generator instead (a large index's C from the
// first document: the cost per document at that scale).
// DOCREPO_BENCH_FIELD=candidates compares keeping the exact tokens written
// for the next look for common terms (commonCandidates) with not keeping
// them.
//
//	DOCREPO_BENCH_DOCS=20000 go test ./search/bleveengine -run XXX \
//	-bench PairFieldWrite -benchtime 1x
func BenchmarkPairFieldWrite(b *testing.B) {
	n := 20000
	if s := os.Getenv("DOCREPO_BENCH_DOCS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	gen := newScaleGen(b, false)
	docs := make([]engine.Document, n)
	for i := range docs {
		docs[i] = gen.doc(i)
	}
	for round := range 4 {
		pairs := round%2 == 1
		if round >= 2 {
			pairs = !pairs
		}
		dir := filepath.Join(b.TempDir(), "idx")
		// The persister's nap of make run (as BenchmarkIngestSmallBatches).
		e, err := Open(dir, Options{PersistNap: 20 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		field := os.Getenv("DOCREPO_BENCH_FIELD")
		switch field {
		case "candidates":
			// The exact tokens kept for the next look for common
			// terms (window.go), or not (as before they were).
			// (A new index starts with a walk pending, until it
			// holds commonRule.minDocs documents: collecting is
			// started by hand.)
			if pairs {
				e.candidates.take()
			} else {
				e.candidates.needWalk()
			}
		case "window":
			e.features.window = pairs
			if k, _ := strconv.Atoi(os.Getenv("DOCREPO_BENCH_COMMON_TERMS")); pairs && k > 0 {
				c := newCommonSet([][]string{gen.vocab[:k]})
				if err := writeCommon(e.idx, c); err != nil {
					b.Fatal(err)
				}
				e.common.Store(c)
			}
		default:
			field = "pairs"
			e.features.pairs = pairs
		}
		runtime.GC()
		cpu0, t0 := processCPU(), time.Now()
		for i := 0; i < n; i += 1000 {
			if _, err := e.Upsert(context.Background(), docs[i:min(n, i+1000)]); err != nil {
				b.Fatal(err)
			}
		}
		upserts := processCPU() - cpu0
		if field == "candidates" {
			scaleLog(b, "candidates %v: %d terms kept", pairs, len(e.candidates.terms))
		}
		idle := waitIdle(30 * time.Second)
		cpu := processCPU() - cpu0
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		all, vecs := dirBytes(dir), dirBytes(filepath.Join(dir, "vectors"))
		scaleLog(b, "%s %-5v (C: %d terms): %d documents in %v, CPU %.3f ms/doc in the upserts, %.3f ms/doc with the merges after them (idle reached: %v); bleve index %.0f B/doc (vectors apart: %.0f B/doc); load average %s",
			field, pairs, e.common.Load().size(), n, time.Since(t0).Round(time.Second), float64(upserts.Microseconds())/1000/float64(n), float64(cpu.Microseconds())/1000/float64(n), idle,
			float64(all-vecs)/float64(n), float64(vecs)/float64(n), loadAvg())
	}
}
