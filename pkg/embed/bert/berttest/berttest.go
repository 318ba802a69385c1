// Package berttest builds small BERT models with random weights for
// tests and benchmarks, and computes what such a model should output
// with a deliberately plain reference implementation: float64, nested
// loops, a padded batch with an attention mask, following the equations
// of Hugging Face's BertModel rather than the optimised code in package
// bert.
//
// No registry reachable from here carries pre-trained BERT weights, so
// the loader, tokenizer and encoder are tested end to end against models
// of the same architecture that these functions write: config.json,
// model.safetensors (with the standard weight names), vocab.txt and,
// optionally, sentence-transformers' 1_Pooling/config.json.
package berttest

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/docrepo/docrepo/pkg/embed/bert"
	"github.com/docrepo/docrepo/pkg/embed/safetensors"
)

// Spec describes a random model.
type Spec struct {
	Layers, Hidden, Heads, Intermediate int
	// MaxPositions is max_position_embeddings (default 64).
	MaxPositions int
	// Vocab lists the tokens by id (default Vocab()); if VocabSize is
	// larger, "[unusedN]" entries fill the rest.
	Vocab     []string
	VocabSize int
	// Act is hidden_act (default "gelu").
	Act string
	// DType of the stored weights (default F32).
	DType safetensors.DType
	// Prefix is prepended to every weight name ("" or "bert.").
	Prefix string
	// Pooling, if set ("mean" or "cls"), is written to
	// 1_Pooling/config.json as sentence-transformers does.
	Pooling string
	// Scale of the weight matrices' random values (default 0.3; BERT's
	// initialisation, 0.02, would make every output nearly the same).
	Scale float64
	Seed  uint64
}

// Tiny is a 2-layer, 32-wide model with 4 heads for fast tests.
func Tiny() Spec {
	return Spec{Layers: 2, Hidden: 32, Heads: 4, Intermediate: 64, MaxPositions: 64, Seed: 1}
}

// MiniLM has the shape of all-MiniLM-L6-v2: 6 layers, 384 wide, 12
// heads, intermediate 1536, 512 positions, 30522 tokens.
func MiniLM() Spec {
	return Spec{Layers: 6, Hidden: 384, Heads: 12, Intermediate: 1536, MaxPositions: 512, VocabSize: 30522, Scale: 0.05, Seed: 2}
}

// Vocab is a small uncased WordPiece vocabulary: the special tokens,
// some words and suffixes, punctuation, and every letter and digit alone
// and as a "##" piece, so that any ASCII text can be tokenised.
func Vocab() []string {
	v := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	v = append(v, strings.Fields(
		"the a of and to in is for on with that by as heart attack car automobile "+
			"myocardial infarction vehicle drive protein cell cells gene tumor patients "+
			"query passage document search semantic vector embed ##ding ##s ##ing ##ed "+
			"un ##aff ##able run ##ning . , ! ? ; : ' \" ( ) - [ ] / %")...)
	for _, c := range "abcdefghijklmnopqrstuvwxyz0123456789" {
		if !slices.Contains(v, string(c)) {
			v = append(v, string(c))
		}
		v = append(v, "##"+string(c))
	}
	return v
}

// Model is a written model's configuration and weights, as stored (after
// rounding to the file's dtype), for the reference implementation.
type Model struct {
	Config  bert.Config
	Vocab   []string
	weights map[string][]float64
}

// Write writes a random model to dir and returns it.
func Write(dir string, s Spec) (*Model, error) {
	if s.MaxPositions == 0 {
		s.MaxPositions = 64
	}
	if s.Vocab == nil {
		s.Vocab = Vocab()
	}
	if s.Act == "" {
		s.Act = "gelu"
	}
	if s.DType == "" {
		s.DType = safetensors.F32
	}
	if s.Scale == 0 {
		s.Scale = 0.3
	}
	vocab := s.Vocab
	for i := len(vocab); i < s.VocabSize; i++ {
		vocab = append(vocab, fmt.Sprintf("[unused%d]", i))
	}
	cfg := bert.Config{
		ModelType: "bert", NameOrPath: fmt.Sprintf("berttest-random-L%d-H%d", s.Layers, s.Hidden),
		VocabSize: len(vocab), HiddenSize: s.Hidden, NumHiddenLayers: s.Layers, NumAttentionHeads: s.Heads,
		IntermediateSize: s.Intermediate, HiddenAct: s.Act, MaxPositionEmbeddings: s.MaxPositions,
		TypeVocabSize: 2, LayerNormEps: 1e-12, PositionEmbeddingType: "absolute",
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x6265727474657374))
	m := &Model{Config: cfg, Vocab: vocab, weights: map[string][]float64{}}
	tensors := map[string]safetensors.Tensor{}
	var err error
	add := func(name string, shape []int, gen func() float64) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(gen())
		}
		t, e := safetensors.FromFloat32s(s.DType, shape, vals)
		if e != nil && err == nil {
			err = e
		}
		tensors[s.Prefix+name] = t
		stored, _ := t.Float32s()
		w := make([]float64, n)
		for i, v := range stored {
			w[i] = float64(v)
		}
		m.weights[name] = w
	}
	normal := func(std float64) func() float64 { return func() float64 { return rng.NormFloat64() * std } }
	around1 := func() float64 { return 1 + rng.NormFloat64()*0.1 }
	H, I := s.Hidden, s.Intermediate
	add("embeddings.word_embeddings.weight", []int{len(vocab), H}, normal(1))
	add("embeddings.position_embeddings.weight", []int{s.MaxPositions, H}, normal(0.5))
	add("embeddings.token_type_embeddings.weight", []int{2, H}, normal(0.5))
	add("embeddings.LayerNorm.weight", []int{H}, around1)
	add("embeddings.LayerNorm.bias", []int{H}, normal(0.1))
	wstd := s.Scale
	for l := range s.Layers {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		for _, qkv := range []string{"query", "key", "value"} {
			add(p+"attention.self."+qkv+".weight", []int{H, H}, normal(wstd))
			add(p+"attention.self."+qkv+".bias", []int{H}, normal(0.1))
		}
		add(p+"attention.output.dense.weight", []int{H, H}, normal(wstd))
		add(p+"attention.output.dense.bias", []int{H}, normal(0.1))
		add(p+"attention.output.LayerNorm.weight", []int{H}, around1)
		add(p+"attention.output.LayerNorm.bias", []int{H}, normal(0.1))
		add(p+"intermediate.dense.weight", []int{I, H}, normal(wstd))
		add(p+"intermediate.dense.bias", []int{I}, normal(0.1))
		add(p+"output.dense.weight", []int{H, I}, normal(wstd))
		add(p+"output.dense.bias", []int{H}, normal(0.1))
		add(p+"output.LayerNorm.weight", []int{H}, around1)
		add(p+"output.LayerNorm.bias", []int{H}, normal(0.1))
	}
	add("pooler.dense.weight", []int{H, H}, normal(wstd)) // present in real checkpoints, unused
	add("pooler.dense.bias", []int{H}, normal(0.1))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, bert.WeightsFile))
	if err != nil {
		return nil, err
	}
	if err := safetensors.Write(f, tensors, map[string]string{"format": "pt"}); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	cb, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, bert.ConfigFile), cb, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "vocab.txt"), []byte(strings.Join(vocab, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	if s.Pooling != "" {
		pc := map[string]any{
			"word_embedding_dimension": H,
			"pooling_mode_cls_token":   s.Pooling == "cls",
			"pooling_mode_mean_tokens": s.Pooling == "mean",
		}
		pb, _ := json.Marshal(pc)
		if err := os.MkdirAll(filepath.Join(dir, "1_Pooling"), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "1_Pooling", "config.json"), pb, 0o644); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// linear returns x·Wᵀ + b for one row x, W being out×in.
func linear(x, w, b []float64, out int) []float64 {
	in := len(x)
	y := make([]float64, out)
	for o := 0; o < out; o++ {
		s := b[o]
		for i := 0; i < in; i++ {
			s += x[i] * w[o*in+i]
		}
		y[o] = s
	}
	return y
}

func layerNorm(x, g, b []float64, eps float64) []float64 {
	var mean, variance float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		variance += (v - mean) * (v - mean)
	}
	variance /= float64(len(x))
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = (v-mean)/math.Sqrt(variance+eps)*g[i] + b[i]
	}
	return y
}

func (m *Model) act(x float64) float64 {
	switch m.Config.HiddenAct {
	case "relu":
		return math.Max(x, 0)
	case "gelu_new", "gelu_pytorch_tanh":
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
	}
	return 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
}

// Forward is the reference forward pass. The sequences are right-padded
// with [PAD] (id 0) to the longest, as a Hugging Face batch is, and the
// attention mask adds the most negative float32 to padded keys' scores,
// as BertModel does. It returns, per sequence, the hidden state of each
// position, padding included.
func (m *Model) Forward(seqs [][]int32) [][][]float64 {
	c := m.Config
	H, heads, I := c.HiddenSize, c.NumAttentionHeads, c.IntermediateSize
	d := H / heads
	L := 0
	for _, s := range seqs {
		L = max(L, len(s))
	}
	w := m.weights
	out := make([][][]float64, len(seqs))
	for b, s := range seqs {
		mask := make([]bool, L)
		x := make([][]float64, L)
		for t := range L {
			id := 0 // [PAD]
			if t < len(s) {
				id, mask[t] = int(s[t]), true
			}
			e := make([]float64, H)
			for j := range H {
				e[j] = w["embeddings.word_embeddings.weight"][id*H+j] +
					w["embeddings.position_embeddings.weight"][t*H+j] +
					w["embeddings.token_type_embeddings.weight"][j]
			}
			x[t] = layerNorm(e, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], c.LayerNormEps)
		}
		for l := range c.NumHiddenLayers {
			p := fmt.Sprintf("encoder.layer.%d.", l)
			q, k, v := make([][]float64, L), make([][]float64, L), make([][]float64, L)
			for t := range L {
				q[t] = linear(x[t], w[p+"attention.self.query.weight"], w[p+"attention.self.query.bias"], H)
				k[t] = linear(x[t], w[p+"attention.self.key.weight"], w[p+"attention.self.key.bias"], H)
				v[t] = linear(x[t], w[p+"attention.self.value.weight"], w[p+"attention.self.value.bias"], H)
			}
			ctx := make([][]float64, L)
			for t := range L {
				ctx[t] = make([]float64, H)
			}
			for h := range heads {
				for i := range L {
					scores := make([]float64, L)
					mx := math.Inf(-1)
					for j := range L {
						var dot float64
						for e := range d {
							dot += q[i][h*d+e] * k[j][h*d+e]
						}
						scores[j] = dot / math.Sqrt(float64(d))
						if !mask[j] {
							scores[j] += -math.MaxFloat32
						}
						mx = math.Max(mx, scores[j])
					}
					var sum float64
					for j := range L {
						scores[j] = math.Exp(scores[j] - mx)
						sum += scores[j]
					}
					for j := range L {
						for e := range d {
							ctx[i][h*d+e] += scores[j] / sum * v[j][h*d+e]
						}
					}
				}
			}
			for t := range L {
				a := linear(ctx[t], w[p+"attention.output.dense.weight"], w[p+"attention.output.dense.bias"], H)
				for j := range H {
					a[j] += x[t][j]
				}
				a = layerNorm(a, w[p+"attention.output.LayerNorm.weight"], w[p+"attention.output.LayerNorm.bias"], c.LayerNormEps)
				inter := linear(a, w[p+"intermediate.dense.weight"], w[p+"intermediate.dense.bias"], I)
				for j := range inter {
					inter[j] = m.act(inter[j])
				}
				o := linear(inter, w[p+"output.dense.weight"], w[p+"output.dense.bias"], H)
				for j := range H {
					o[j] += a[j]
				}
				x[t] = layerNorm(o, w[p+"output.LayerNorm.weight"], w[p+"output.LayerNorm.bias"], c.LayerNormEps)
			}
		}
		out[b] = x
	}
	return out
}

// Embed is the reference sentence embedding: the attention-masked mean
// of the hidden states (sentence-transformers' mean pooling) or the
// [CLS] state, then L2 normalisation.
func (m *Model) Embed(seqs [][]int32, pooling string) [][]float64 {
	states := m.Forward(seqs)
	H := m.Config.HiddenSize
	out := make([][]float64, len(seqs))
	for b, s := range seqs {
		v := make([]float64, H)
		if pooling == "cls" {
			copy(v, states[b][0])
		} else {
			for t := range s { // only the unpadded positions
				for j := range H {
					v[j] += states[b][t][j]
				}
			}
			for j := range H {
				v[j] /= float64(len(s))
			}
		}
		var n float64
		for _, x := range v {
			n += x * x
		}
		n = math.Sqrt(n)
		for j := range v {
			v[j] /= n
		}
		out[b] = v
	}
	return out
}
