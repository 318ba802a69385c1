package embed

import (
	"context"
	"errors"
	"math"
	"testing"
)

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestHashVectorShape(t *testing.T) {
	h, err := NewHash(DefaultHashDimensions)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		text     string
		wantNorm float64
	}{
		{name: "sentence", text: "Microglia mediate synaptic pruning in the developing brain.", wantNorm: 1},
		{name: "one word", text: "mitochondria", wantNorm: 1},
		{name: "non-Latin script", text: "Синаптическая пластичность", wantNorm: 1},
		{name: "empty", text: "", wantNorm: 0},
		{name: "punctuation only", text: "… --- !!!", wantNorm: 0},
		{name: "stop words only", text: "the and of to", wantNorm: 0},
		{name: "invalid UTF-8", text: "caf\xe9 au lait", wantNorm: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := h.Vector(tc.text)
			if len(v) != DefaultHashDimensions {
				t.Fatalf("len = %d, want %d", len(v), DefaultHashDimensions)
			}
			if n := norm(v); math.Abs(n-tc.wantNorm) > 1e-5 {
				t.Errorf("norm = %v, want %v", n, tc.wantNorm)
			}
			if again := h.Vector(tc.text); squaredL2(v, again) != 0 {
				t.Errorf("not deterministic")
			}
		})
	}
}

func TestHashSimilarity(t *testing.T) {
	h, err := NewHash(DefaultHashDimensions)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name             string
		query, near, far string
	}{
		{
			name:  "shared stems",
			query: "vaccination reduces hospital admissions",
			near:  "Vaccinated patients were admitted to hospitals less often.",
			far:   "The rocket engine burns liquid oxygen and kerosene.",
		},
		{
			name:  "case and inflection",
			query: "GENOME SEQUENCING",
			near:  "genomes were sequenced",
			far:   "a quiet evening by the lake",
		},
		{
			name:  "subword overlap",
			query: "immunotherapy",
			near:  "immunotherapies for melanoma",
			far:   "supply chains and logistics",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := h.Vector(tc.query)
			dNear, dFar := squaredL2(q, h.Vector(tc.near)), squaredL2(q, h.Vector(tc.far))
			if dNear >= dFar {
				t.Errorf("distance to related text %.3f >= to unrelated %.3f", dNear, dFar)
			}
		})
	}
}

func TestHashEmbed(t *testing.T) {
	h, err := NewHash(64)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"alpha beta", "", "gamma"}
	vecs, err := h.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("got %d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if want := h.Vector(texts[i]); squaredL2(v, want) != 0 {
			t.Errorf("vector %d differs from Vector(%q)", i, texts[i])
		}
	}
	if h.Dimensions() != 64 || h.Name() != "hash-v1-64" {
		t.Errorf("Dimensions, Name = %d, %q", h.Dimensions(), h.Name())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Embed(ctx, texts); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed with cancelled ctx: err = %v, want context.Canceled", err)
	}
}

func TestNewHashDimensions(t *testing.T) {
	tests := []struct {
		name    string
		dim     int
		wantErr bool
	}{
		{name: "default", dim: DefaultHashDimensions},
		{name: "smallest", dim: minHashDimensions},
		{name: "largest", dim: maxHashDimensions},
		{name: "too small", dim: minHashDimensions - 1, wantErr: true},
		{name: "zero", dim: 0, wantErr: true},
		{name: "negative", dim: -5, wantErr: true},
		{name: "too large", dim: maxHashDimensions + 1, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewHash(tc.dim)
			if tc.wantErr {
				if !errors.Is(err, ErrConfig) {
					t.Errorf("err = %v, want ErrConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := len(h.Vector("some words here")); got != tc.dim {
				t.Errorf("vector length %d, want %d", got, tc.dim)
			}
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		wantName string
		wantDim  int
		wantErr  bool
	}{
		{name: "empty kind is hash", cfg: Config{}, wantName: "hash-v1-768", wantDim: DefaultHashDimensions},
		{name: "hash with dimensions", cfg: Config{Kind: "HASH", Dimensions: 256}, wantName: "hash-v1-256", wantDim: 256},
		{name: "hash bad dimensions", cfg: Config{Kind: "hash", Dimensions: 3}, wantErr: true},
		{name: "openai", cfg: Config{Kind: "openai", BaseURL: "http://localhost:11434/v1", Model: "nomic-embed-text", Dimensions: 768}, wantName: "openai:nomic-embed-text", wantDim: 768},
		{name: "openai without URL", cfg: Config{Kind: "openai", Model: "m"}, wantErr: true},
		{name: "openai bad URL", cfg: Config{Kind: "openai", BaseURL: "localhost:11434", Model: "m"}, wantErr: true},
		{name: "openai without model", cfg: Config{Kind: "openai", BaseURL: "http://x/v1"}, wantErr: true},
		{name: "openai send dimensions without dimensions", cfg: Config{Kind: "openai", BaseURL: "http://x/v1", Model: "m", SendDimensions: true}, wantErr: true},
		{name: "unknown kind", cfg: Config{Kind: "word2vec"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(tc.cfg)
			if tc.wantErr {
				if !errors.Is(err, ErrConfig) {
					t.Errorf("err = %v, want ErrConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Name() != tc.wantName || e.Dimensions() != tc.wantDim {
				t.Errorf("Name, Dimensions = %q, %d; want %q, %d", e.Name(), e.Dimensions(), tc.wantName, tc.wantDim)
			}
		})
	}
}

// TestHashWeightedVector checks the query side's weighted hash vector:
// no weights is Vector, equal weights are Vector (it is normalised), a
// word weighing 0 is left out, and a heavier word moves the vector
// towards the documents holding it.
func TestHashWeightedVector(t *testing.T) {
	h, err := NewHash(DefaultHashDimensions)
	if err != nil {
		t.Fatal(err)
	}
	const text = "measles vaccination children"
	for _, tc := range []struct {
		name   string
		weight func(string) float64
		want   []float32
	}{
		{name: "nil", weight: nil, want: h.Vector(text)},
		{name: "equal", weight: func(string) float64 { return 3 }, want: h.Vector(text)},
		{name: "a word left out", weight: func(w string) float64 {
			if w == "children" {
				return 0
			}
			return 1
		}, want: h.Vector("measles vaccination")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := h.WeightedVector(text, tc.weight)
			if d := squaredL2(got, tc.want); d > 1e-10 {
				t.Errorf("squared distance %g from the expected vector", d)
			}
		})
	}
	heavy := h.WeightedVector(text, func(w string) float64 {
		if w == "measles" {
			return 5
		}
		return 1
	})
	plain := h.Vector(text)
	measles, children := h.Vector("measles outbreak"), h.Vector("children playing")
	if !(dot(heavy, measles) > dot(plain, measles) && dot(heavy, children) < dot(plain, children)) {
		t.Errorf("weighting measles: cos with a measles text %.3f (unweighted %.3f), with a children text %.3f (unweighted %.3f)",
			dot(heavy, measles), dot(plain, measles), dot(heavy, children), dot(plain, children))
	}
}
