package embed

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
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
