package ann

import (
	"os"
	"strconv"
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
