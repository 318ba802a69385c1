package bert_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed/bert"
	"github.com/docrepo/docrepo/pkg/embed/bert/berttest"
	"github.com/docrepo/docrepo/pkg/embed/safetensors"
)

// seqs are token-id sequences of the tiny model's vocabulary, of
// different lengths ([CLS]=2 first, [SEP]=3 last).
func testSeqs(vocab int, lengths ...int) [][]int32 {
	rng := rand.New(rand.NewPCG(7, 7))
	out := make([][]int32, len(lengths))
	for i, n := range lengths {
		s := make([]int32, n)
		for j := range s {
			s[j] = int32(5 + rng.IntN(vocab-5))
		}
		s[0], s[n-1] = 2, 3
		out[i] = s
	}
	return out
}

func writeAndLoad(t testing.TB, spec berttest.Spec) (*berttest.Model, *bert.Model) {
	t.Helper()
	dir := t.TempDir()
	ref, err := berttest.Write(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	m, err := bert.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ref, m
}

// TestForwardMatchesReference loads random models through the real
// loader and compares every hidden state of the real tokens, and the
// pooled embeddings, with the float64 reference implementation run on a
// padded, masked batch.
func TestForwardMatchesReference(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*berttest.Spec)
		pooling bert.Pooling
	}{
		{name: "f32 mean", pooling: bert.Mean},
		{name: "f32 cls", pooling: bert.CLS},
		{name: "f16 weights", mutate: func(s *berttest.Spec) { s.DType = safetensors.F16; s.Seed = 3 }},
		{name: "bf16 weights", mutate: func(s *berttest.Spec) { s.DType = safetensors.BF16; s.Seed = 4 }},
		{name: "bert. prefix", mutate: func(s *berttest.Spec) { s.Prefix = "bert."; s.Seed = 5 }},
		{name: "tanh gelu, 3 layers, 2 heads", mutate: func(s *berttest.Spec) {
			s.Act, s.Layers, s.Heads, s.Hidden, s.Intermediate, s.Seed = "gelu_new", 3, 2, 24, 40, 6
		}},
		{name: "relu, 1 head", mutate: func(s *berttest.Spec) { s.Act, s.Heads, s.Seed = "relu", 1, 8 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := berttest.Tiny()
			if tc.mutate != nil {
				tc.mutate(&spec)
			}
			ref, m := writeAndLoad(t, spec)
			seqs := testSeqs(m.Config().VocabSize, 7, 2, 19, 64, 1, 33)
			got, err := m.Forward(seqs)
			if err != nil {
				t.Fatal(err)
			}
			want := ref.Forward(seqs)
			var worst float64
			for b, s := range seqs {
				H := m.Dimensions()
				if len(got[b]) != len(s)*H {
					t.Fatalf("sequence %d: %d values, want %d", b, len(got[b]), len(s)*H)
				}
				for tok := range s {
					for j := range H {
						worst = math.Max(worst, math.Abs(float64(got[b][tok*H+j])-want[b][tok][j]))
					}
				}
			}
			if worst > 1e-4 {
				t.Errorf("hidden states differ from the reference by up to %g", worst)
			}
			t.Logf("largest difference of a hidden state from the reference: %.2g", worst)
			emb, err := m.Embed(seqs, tc.pooling)
			if err != nil {
				t.Fatal(err)
			}
			wantEmb := ref.Embed(seqs, tc.pooling.String())
			worst = 0
			for b := range seqs {
				for j := range emb[b] {
					worst = math.Max(worst, math.Abs(float64(emb[b][j])-wantEmb[b][j]))
				}
			}
			if worst > 1e-4 {
				t.Errorf("embeddings differ from the reference by up to %g", worst)
			}
			t.Logf("largest difference of an embedding from the reference: %.2g", worst)
		})
	}
}

// TestBatchInvariance: a sequence's vector is the same, bit for bit, alone
// or in a batch with longer and shorter ones, in any order, on any number
// of cores.
func TestBatchInvariance(t *testing.T) {
	_, m := writeAndLoad(t, berttest.Tiny())
	seqs := testSeqs(m.Config().VocabSize, 9, 40, 3, 64)
	seqs = append(seqs, seqs[0]) // a duplicate
	alone := make([][]float32, len(seqs))
	for i, s := range seqs {
		v, err := m.Embed([][]int32{s}, bert.Mean)
		if err != nil {
			t.Fatal(err)
		}
		alone[i] = v[0]
	}
	check := func(name string, batch [][]int32, idx []int) {
		t.Helper()
		vs, err := m.Embed(batch, bert.Mean)
		if err != nil {
			t.Fatal(err)
		}
		for b, i := range idx {
			for j := range vs[b] {
				if vs[b][j] != alone[i][j] {
					t.Fatalf("%s: sequence %d differs at %d: %v alone, %v in the batch", name, i, j, alone[i][j], vs[b][j])
				}
			}
		}
	}
	check("in order", seqs, []int{0, 1, 2, 3, 4})
	check("reversed", [][]int32{seqs[4], seqs[3], seqs[2], seqs[1], seqs[0]}, []int{4, 3, 2, 1, 0})
	check("with a longer one", [][]int32{seqs[2], seqs[3]}, []int{2, 3})
	prev := runtime.GOMAXPROCS(1)
	check("one core", seqs, []int{0, 1, 2, 3, 4})
	runtime.GOMAXPROCS(prev)
	// Identical sequences give identical vectors.
	for j := range alone[0] {
		if alone[0][j] != alone[4][j] {
			t.Fatal("equal sequences, different vectors")
		}
	}
}

func TestEmbedDeterministicAndNormalised(t *testing.T) {
	_, m := writeAndLoad(t, berttest.Tiny())
	seqs := testSeqs(m.Config().VocabSize, 5, 12, 30)
	first, err := m.Embed(seqs, bert.Mean)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		again, err := m.Embed(seqs, bert.Mean)
		if err != nil {
			t.Fatal(err)
		}
		for i := range first {
			for j := range first[i] {
				if first[i][j] != again[i][j] {
					t.Fatalf("run differs at %d/%d", i, j)
				}
			}
		}
	}
	for i, v := range first {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if math.Abs(math.Sqrt(n)-1) > 1e-5 {
			t.Errorf("vector %d has norm %v", i, math.Sqrt(n))
		}
	}
	// Different inputs give different vectors.
	var d float64
	for j := range first[0] {
		d += math.Abs(float64(first[0][j] - first[1][j]))
	}
	if d < 1e-3 {
		t.Errorf("different sequences, nearly equal vectors (L1 %v)", d)
	}
}

func TestForwardRejectsBadInput(t *testing.T) {
	_, m := writeAndLoad(t, berttest.Tiny())
	tests := []struct {
		name string
		seqs [][]int32
	}{
		{"empty sequence", [][]int32{{}}},
		{"too long", [][]int32{make([]int32, m.MaxTokens()+1)}},
		{"id past the vocabulary", [][]int32{{2, int32(m.Config().VocabSize), 3}}},
		{"negative id", [][]int32{{2, -1, 3}}},
	}
	for _, tc := range tests {
		if _, err := m.Forward(tc.seqs); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestLoadNamesWhatIsWrongWithAMalformedModel(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(t *testing.T, dir string)
		wants []string
	}{
		{"no config.json", func(t *testing.T, dir string) { remove(t, dir, bert.ConfigFile) }, []string{"config.json"}},
		{"no weights", func(t *testing.T, dir string) { remove(t, dir, bert.WeightsFile) }, []string{"model.safetensors is missing"}},
		{"only ONNX weights", func(t *testing.T, dir string) {
			remove(t, dir, bert.WeightsFile)
			write(t, dir, "model.onnx", "x")
		}, []string{"model.safetensors is missing", "model.onnx present"}},
		{"not BERT", func(t *testing.T, dir string) {
			edit(t, dir, bert.ConfigFile, `"model_type": "bert"`, `"model_type": "xlm-roberta"`)
		}, []string{`model_type "xlm-roberta"`}},
		{"unknown activation", func(t *testing.T, dir string) {
			edit(t, dir, bert.ConfigFile, `"hidden_act": "gelu"`, `"hidden_act": "swiglu"`)
		}, []string{`hidden_act "swiglu"`}},
		{"shape disagrees with config", func(t *testing.T, dir string) {
			edit(t, dir, bert.ConfigFile, `"intermediate_size": 64`, `"intermediate_size": 65`)
		}, []string{"intermediate.dense.weight has shape [64 32]"}},
		{"heads do not divide hidden", func(t *testing.T, dir string) {
			edit(t, dir, bert.ConfigFile, `"num_attention_heads": 4`, `"num_attention_heads": 5`)
		}, []string{"not a multiple"}},
		{"more layers than weights", func(t *testing.T, dir string) {
			edit(t, dir, bert.ConfigFile, `"num_hidden_layers": 2`, `"num_hidden_layers": 3`)
		}, []string{"encoder.layer.2.", "missing"}},
		{"truncated weights", func(t *testing.T, dir string) {
			b, err := os.ReadFile(filepath.Join(dir, bert.WeightsFile))
			if err != nil {
				t.Fatal(err)
			}
			write(t, dir, bert.WeightsFile, string(b[:len(b)-10]))
		}, []string{"safetensors"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := berttest.Write(dir, berttest.Tiny()); err != nil {
				t.Fatal(err)
			}
			tc.edit(t, dir)
			_, err := bert.Load(dir)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	dir := t.TempDir()
	if _, err := berttest.Write(dir, berttest.Tiny()); err != nil {
		t.Fatal(err)
	}
	edit(t, dir, bert.ConfigFile, `"model_type": "bert"`, `"model_type": "roberta"`)
	if _, err := bert.Load(dir); !errors.Is(err, bert.ErrModel) {
		t.Errorf("err = %v, want ErrModel", err)
	}
}

func TestLoadReportsDigest(t *testing.T) {
	_, m := writeAndLoad(t, berttest.Tiny())
	if len(m.WeightsSHA256()) != 64 {
		t.Errorf("digest %q", m.WeightsSHA256())
	}
	_, other := writeAndLoad(t, berttest.Spec{Layers: 2, Hidden: 32, Heads: 4, Intermediate: 64, Seed: 99})
	if other.WeightsSHA256() == m.WeightsSHA256() {
		t.Error("different weights, same digest")
	}
}

func TestParsePoolingAcceptsMeanAndCLSOnly(t *testing.T) {
	tests := []struct {
		in   string
		want bert.Pooling
		ok   bool
	}{{"mean", bert.Mean, true}, {" CLS ", bert.CLS, true}, {"max", 0, false}, {"", 0, false}}
	for _, tc := range tests {
		got, err := bert.ParsePooling(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParsePooling(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func remove(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func edit(t *testing.T, dir, name, old, new string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q:\n%s", name, old, b)
	}
	write(t, dir, name, strings.Replace(string(b), old, new, 1))
}

// BenchmarkForward measures the encoder alone on 128-token sequences.
func BenchmarkForward(b *testing.B) {
	for _, tc := range []struct {
		name  string
		spec  berttest.Spec
		batch int
	}{
		{"tiny/batch=16", berttest.Tiny(), 16},
		{"minilm/batch=1", berttest.MiniLM(), 1},
		{"minilm/batch=16", berttest.MiniLM(), 16},
	} {
		b.Run("kernel="+bert.Kernel()+"/"+tc.name, func(b *testing.B) {
			_, m := writeAndLoad(b, tc.spec)
			n := min(128, m.MaxTokens())
			lengths := make([]int, tc.batch)
			for i := range lengths {
				lengths[i] = n
			}
			seqs := testSeqs(m.Config().VocabSize, lengths...)
			b.ResetTimer()
			for b.Loop() {
				if _, err := m.Embed(seqs, bert.Mean); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(tc.batch*b.N)/b.Elapsed().Seconds(), "seqs/s")
		})
	}
}
