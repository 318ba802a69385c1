package embed

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/embed/bert"
	"github.com/docrepo/docrepo/pkg/embed/bert/berttest"
)

// benchTexts are 1000 pseudo-abstracts of 200 words drawn from a fixed
// vocabulary, so the benchmark needs no data files.
func benchTexts() []string {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := strings.Fields("protein expression cells tumor patients clinical receptor binding signalling pathway " +
		"mutation genome sequencing inflammation immune response therapy randomized trial mortality risk " +
		"cohort association increased decreased significantly mice model neurons synaptic plasticity memory")
	texts := make([]string, 1000)
	for i := range texts {
		words := make([]string, 200)
		for j := range words {
			words[j] = vocab[rng.IntN(len(vocab))]
		}
		texts[i] = strings.Join(words, " ")
	}
	return texts
}

// BenchmarkHashEmbed1000 measures the hash embedder on 1000 texts of 200
// words (one op = 1000 embeddings).
func BenchmarkHashEmbed1000(b *testing.B) {
	h, err := NewHash(DefaultHashDimensions)
	if err != nil {
		b.Fatal(err)
	}
	texts := benchTexts()
	b.ResetTimer()
	for b.Loop() {
		if _, err := h.Embed(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExactL2Scan100k measures one exact nearest-neighbour scan over
// 100,000 vectors at several dimensions (the embedded engine's vector path).
func BenchmarkExactL2Scan100k(b *testing.B) {
	for _, dim := range []int{256, 512, 768, 1024, 2048} {
		b.Run(fmt.Sprintf("dim=%d", dim), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(3, 4))
			flat := make([]float32, 100_000*dim)
			for i := range flat {
				flat[i] = rng.Float32()
			}
			q := flat[:dim]
			b.ResetTimer()
			for b.Loop() {
				best := float64(1e30)
				for off := 0; off < len(flat); off += dim {
					if d := squaredL2(q, flat[off:off+dim]); d < best {
						best = d
					}
				}
			}
		})
	}
}

// BenchmarkLocal measures the local embedder on random models of two
// shapes: the tiny test model and all-MiniLM-L6-v2's (6 layers, 384 wide,
// 12 heads, intermediate 1536, 30522 tokens). It reports passages/s for
// batches of 16 passages of 128 tokens ([CLS] and [SEP] included), for a
// 2,000-word document split into 256-token passages, and the latency of
// one short query (p50 and p99), and the heap the loaded model holds.
// The encoder's matrix kernel is in the
// name: go-scalar, or avx2-fma in a GOEXPERIMENT=simd build.
func BenchmarkLocal(b *testing.B) {
	var words []string
	for _, w := range berttest.Vocab() {
		if !strings.HasPrefix(w, "##") && !strings.HasPrefix(w, "[") && len(w) > 1 {
			words = append(words, w)
		}
	}
	text := func(n, seed int) string {
		out := make([]string, n)
		for i := range out {
			out[i] = words[(i*7+seed*13)%len(words)]
		}
		return strings.Join(out, " ")
	}
	passages := make([]string, 16)
	for i := range passages {
		passages[i] = text(126, i) // one token a word: 128 with [CLS] and [SEP]
	}
	document := text(2000, 99)
	query := "heart attack patients myocardial infarction"
	tiny := berttest.Tiny()
	tiny.MaxPositions = 512
	for _, m := range []struct {
		name string
		spec berttest.Spec
	}{{"tiny", tiny}, {"minilm-l6-shape", berttest.MiniLM()}} {
		dir := b.TempDir()
		if _, err := berttest.Write(dir, m.spec); err != nil {
			b.Fatal(err)
		}
		prefix := m.name + "/kernel=" + bert.Kernel()
		ctx := context.Background()
		b.Run(prefix+"/passages-128tok", func(b *testing.B) {
			var before, loaded runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			l, err := NewLocal(LocalConfig{ModelDir: dir, MaxTokens: 128})
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			runtime.ReadMemStats(&loaded)
			modelMB := float64(loaded.HeapAlloc-before.HeapAlloc) / (1 << 20)
			for b.Loop() {
				if _, err := l.Embed(ctx, passages); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(modelMB, "model-heap-MB")
			b.ReportMetric(float64(len(passages)*b.N)/b.Elapsed().Seconds(), "passages/s")
		})
		b.Run(prefix+"/document-2000words-256tok", func(b *testing.B) {
			l, err := NewLocal(LocalConfig{ModelDir: dir, MaxTokens: 256})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for b.Loop() {
				ps, err := l.EmbedPassages(ctx, []string{document}, 0)
				if err != nil {
					b.Fatal(err)
				}
				n += len(ps[0])
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "passages/s")
			b.ReportMetric(float64(n)/float64(b.N), "passages/doc")
		})
		b.Run(prefix+"/query", func(b *testing.B) {
			l, err := NewLocal(LocalConfig{ModelDir: dir, MaxTokens: 256, QueryPrefix: "query: "})
			if err != nil {
				b.Fatal(err)
			}
			var lat []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := l.EmbedQueries(ctx, []string{query}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
