package ann

import (
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkBuild measures the cost of adding DOCREPO_ANN_DOCS (default
// 3,000) hash-embedded documents of 768 dimensions to a graph, per node
// (the writer's cost of the vector index; the shrinking of full
// neighbour lists is part of it):
//
//	go test ./search/ann -run XXX -bench Build -benchtime 1x
func BenchmarkBuild(b *testing.B) {
	n := benchDocs(3000)
	const dim = 768
	docs, _ := hashCorpus(b, n, 0, dim, true)
	for b.Loop() {
		t0 := time.Now()
		g := New(dim, func(id int32) []float32 { return docs[id] }, Config{Seed: 1})
		for _, v := range docs {
			g.Add(v)
		}
		el := time.Since(t0)
		b.ReportMetric(float64(el.Microseconds())/float64(n), "µs/add")
	}
}

// benchDocs returns DOCREPO_ANN_DOCS as a number of documents (0 when it
// does not parse), or def when it is unset.
func benchDocs(def int) int {
	if s := os.Getenv("DOCREPO_ANN_DOCS"); s != "" {
		n, _ := strconv.Atoi(s)
		return n
	}
	return def
}

// BenchmarkAddLogged measures what logging costs an Add: the same
// DOCREPO_ANN_DOCS (default 3,000) hash-embedded documents of 768
// dimensions added with Add and with AddLogged (the record appended to a
// reused buffer, as the engine's log does), alternately, µs per add each
// and the record's bytes per add:
//
//	go test ./search/ann -run XXX -bench AddLogged -benchtime 3x
func BenchmarkAddLogged(b *testing.B) {
	n := benchDocs(3000)
	const dim = 768
	docs, _ := hashCorpus(b, n, 0, dim, true)
	vec := func(id int32) []float32 { return docs[id] }
	var plain, logged time.Duration
	var recBytes int
	for b.Loop() {
		t0 := time.Now()
		g := New(dim, vec, Config{Seed: 1})
		for _, v := range docs {
			g.Add(v)
		}
		plain += time.Since(t0)
		t0 = time.Now()
		g = New(dim, vec, Config{Seed: 1})
		var rec []byte
		for _, v := range docs {
			_, rec = g.AddLogged(v, rec[:0])
			recBytes += len(rec)
		}
		logged += time.Since(t0)
	}
	runs := float64(b.N * n)
	b.ReportMetric(float64(plain.Microseconds())/runs, "µs/add")
	b.ReportMetric(float64(logged.Microseconds())/runs, "µs/logged-add")
	b.ReportMetric(float64(recBytes)/runs, "record-B/add")
}

// BenchmarkBuildRules compares a build that keeps each layer-0 link's
// distance to its node (the graph's linkDist) with one that computes a
// full list's distances again at each shrinking (Config.Recompute, the
// build before 2026-11-27e) on DOCREPO_ANN_DOCS (default 3,000)
// hash-embedded documents of 768 dimensions: the two graphs built on one
// thread, alternately 250 adds of one and of the other, thread CPU per
// add of each, and recall@10 of 50 held-out documents walked at breadth
// 100 (the graphs are the same: TestKeptLinkDistancesBuildTheSameGraph):
//
//	go test ./search/ann -run XXX -bench BuildRules -benchtime 1x
func BenchmarkBuildRules(b *testing.B) {
	n := benchDocs(3000)
	const dim, chunk = 768, 250
	docs, queries := hashCorpus(b, n, 50, dim, true)
	vec := func(id int32) []float32 { return docs[id] }
	rules := []struct {
		name      string
		recompute bool
	}{{"recompute", true}, {"kept", false}}
	for b.Loop() {
		runtime.LockOSThread()
		graphs := make([]*Graph, len(rules))
		cpu := make([]time.Duration, len(rules))
		for i, r := range rules {
			graphs[i] = New(dim, vec, Config{Seed: 1, Recompute: r.recompute})
		}
		for at := 0; at < n; at += chunk {
			for i, g := range graphs {
				c := threadCPU()
				for _, v := range docs[at:min(n, at+chunk)] {
					g.Add(v)
				}
				cpu[i] += threadCPU() - c
			}
		}
		runtime.UnlockOSThread()
		for i, g := range graphs {
			var r10 float64
			for _, q := range queries {
				rs, _ := g.Search(NewQuery(q), SearchOptions{Ef: 100})
				r10 += recall(rerank(docs, q, rs, 10), exactTop(docs, q, 10, nil))
			}
			b.ReportMetric(float64(cpu[i].Microseconds())/float64(n), "µs-CPU/add-"+rules[i].name)
			b.ReportMetric(r10/float64(len(queries)), "recall@10-"+rules[i].name)
		}
		b.ReportMetric(float64(cpu[0])/float64(cpu[1]), "CPU-recompute/kept")
	}
}

// threadCPU returns the CPU time of the calling thread (the caller locks
// its goroutine to it).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD (Linux)
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
