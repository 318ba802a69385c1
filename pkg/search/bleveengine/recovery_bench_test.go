package bleveengine

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// BenchmarkCrashRecovery measures what a crash costs the next start
// (issue 23): DOCREPO_RECOVERY_DOCS (default 5,000) documents with 1-3
// content passages and a metadata vector, each blended like the `use`
// embedder's (a 512-value semantic half near one of 40 topics and a
// 768-value lexical hash half: 1,280 values), written in batches of 256
// to an engine with graphs; then the directory is copied as a kill -9
// leaves it (no Close: the vector index's last checkpoint, if any, is
// older than the bleve index) and opened. It reports the writes'
// throughput and CPU per document (the cost the vector log adds to each
// write) and the Open of the copy, wall and CPU. The benchmark uses only
// what main had before the log, so the same file measures both:
//
//	GOEXPERIMENT=simd DOCREPO_RECOVERY_DOCS=5000 nice -n 10 go test ./search/bleveengine -run XXX -bench CrashRecovery -benchtime 1x
func BenchmarkCrashRecovery(b *testing.B) {
	n := 5000
	if s := os.Getenv("DOCREPO_RECOVERY_DOCS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	const semDim, lexDim = 512, 768
	h, err := embed.NewHash(lexDim)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(23, 1))
	topics := make([][]float32, 40)
	for i := range topics {
		topics[i] = noisyUnit(r, make([]float32, semDim), 1)
	}
	text := zipfText(r, testVocab(5000))
	blend := func(words int) []float32 {
		return blendHalves(noisyUnit(r, topics[r.IntN(len(topics))], 0.12), h.Vector(text(words)), 0.4)
	}
	docs := make([]engine.Document, n)
	vectors := 0
	for i := range docs {
		var ps [][]float32
		for range 1 + r.IntN(3) {
			ps = append(ps, blend(60+r.IntN(60)))
		}
		vectors += len(ps) + 1
		docs[i] = engine.Document{ID: int64(i + 1), Rev: 1, Content: text(20), ContentVectors: ps, MetadataVector: blend(6)}
	}
	ctx := context.Background()
	opts := Options{VectorGraph: GraphAlways}
	for range b.N {
		root := b.TempDir()
		dir := filepath.Join(root, "idx")
		e, err := Open(dir, opts)
		if err != nil {
			b.Fatal(err)
		}
		cpu0, t0 := processCPU(), time.Now()
		for i := 0; i < n; i += 256 {
			if _, err := e.Upsert(ctx, docs[i:min(n, i+256)]); err != nil {
				b.Fatal(err)
			}
		}
		writeWall, writeCPU := time.Since(t0), processCPU()-cpu0
		crashed := filepath.Join(root, "crashed")
		copyDir(b, dir, crashed)
		e.Close()
		vecBytes := dirBytes(filepath.Join(crashed, vectorsDir))

		cpu0, t0 = processCPU(), time.Now()
		e, err = Open(crashed, opts)
		if err != nil {
			b.Fatal(err)
		}
		openWall, openCPU := time.Since(t0), processCPU()-cpu0
		res, err := e.Search(ctx, engine.Request{
			Query:        queryOf(b, `{"where": {"vector": {"target": "content", "query": "q"}}, "options": {"vector_k": 10}, "limit": 10}`),
			QueryVector:  docs[n/2].ContentVectors[0],
			Unrestricted: true,
		})
		if err != nil || len(res.Hits) == 0 || res.Hits[0].ID != docs[n/2].ID {
			b.Fatalf("after the recovery, the nearest to document %d's passage: %v (%v)", docs[n/2].ID, res, err)
		}
		e.Close()
		b.ReportMetric(float64(n)/writeWall.Seconds(), "write-docs/s")
		b.ReportMetric(float64(writeCPU.Microseconds())/1000/float64(n), "write-cpu-ms/doc")
		b.ReportMetric(openWall.Seconds(), "open-s")
		b.ReportMetric(openCPU.Seconds(), "open-cpu-s")
		b.Logf("%d documents, %d vectors of %d values: writes %v wall, %v CPU; vectors directory after the crash %.1f MiB; Open of the copy %v wall, %v CPU",
			n, vectors, semDim+lexDim, writeWall.Round(time.Millisecond), writeCPU.Round(time.Millisecond), float64(vecBytes)/(1<<20), openWall.Round(time.Millisecond), openCPU.Round(time.Millisecond))
	}
}
