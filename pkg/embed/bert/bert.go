// Package bert is a BERT encoder in pure Go: it loads a Hugging Face
// model directory (config.json and model.safetensors with the standard
// BertModel weight names, with or without a "bert." prefix) and runs the
// forward pass on float32 weights (F16 and BF16 files are widened at
// load) on all cores.
//
// Sequences are packed, not padded: a batch is the concatenation of its
// sequences' tokens, the dense layers run over all of them at once, and
// each sequence's self-attention sees only its own tokens. That is what
// an attention mask over right-padding computes, without the padding:
// no work is spent on pad tokens, and a sequence's output is the same,
// to the bit, alone or in any batch (every dot product sums in the same
// order wherever its row is).
//
// Embed adds the sentence-embedding head: mean pooling over a sequence's
// tokens ([CLS] and [SEP] included, as sentence-transformers does) or
// the [CLS] token's state, then L2 normalisation.
package bert

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/docrepo/docrepo/pkg/embed/safetensors"
)

// File names Load reads from a model directory.
const (
	ConfigFile  = "config.json"
	WeightsFile = "model.safetensors"
)

// ErrModel reports a model directory or weights file that cannot be used.
var ErrModel = errors.New("bert: unusable model")

// Config is the part of a Hugging Face config.json the encoder needs.
type Config struct {
	ModelType             string  `json:"model_type"`
	NameOrPath            string  `json:"_name_or_path"`
	VocabSize             int     `json:"vocab_size"`
	HiddenSize            int     `json:"hidden_size"`
	NumHiddenLayers       int     `json:"num_hidden_layers"`
	NumAttentionHeads     int     `json:"num_attention_heads"`
	IntermediateSize      int     `json:"intermediate_size"`
	HiddenAct             string  `json:"hidden_act"`
	MaxPositionEmbeddings int     `json:"max_position_embeddings"`
	TypeVocabSize         int     `json:"type_vocab_size"`
	LayerNormEps          float64 `json:"layer_norm_eps"`
	PositionEmbeddingType string  `json:"position_embedding_type,omitempty"`
}

// ReadConfig reads and checks a config.json.
func ReadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, fmt.Errorf("%w: %s: %v", ErrModel, path, err)
	}
	if err := c.check(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

func (c *Config) check() error {
	if c.ModelType != "" && c.ModelType != "bert" {
		return fmt.Errorf("%w: model_type %q is not supported (want bert: all-MiniLM, bge, e5 and gte small/base models are)", ErrModel, c.ModelType)
	}
	if c.PositionEmbeddingType != "" && c.PositionEmbeddingType != "absolute" {
		return fmt.Errorf("%w: position_embedding_type %q is not supported (want absolute)", ErrModel, c.PositionEmbeddingType)
	}
	if c.HiddenAct == "" {
		c.HiddenAct = "gelu"
	}
	if _, ok := activations[c.HiddenAct]; !ok {
		return fmt.Errorf("%w: hidden_act %q is not supported", ErrModel, c.HiddenAct)
	}
	if c.LayerNormEps == 0 {
		c.LayerNormEps = 1e-12
	}
	if c.TypeVocabSize == 0 {
		c.TypeVocabSize = 2
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize}, {"num_hidden_layers", c.NumHiddenLayers},
		{"num_attention_heads", c.NumAttentionHeads}, {"intermediate_size", c.IntermediateSize},
		{"max_position_embeddings", c.MaxPositionEmbeddings},
	} {
		if f.v <= 0 {
			return fmt.Errorf("%w: %s is %d", ErrModel, f.name, f.v)
		}
	}
	if c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("%w: hidden_size %d is not a multiple of num_attention_heads %d", ErrModel, c.HiddenSize, c.NumAttentionHeads)
	}
	return nil
}

var activations = map[string]func(float32) float32{
	"gelu": func(x float32) float32 {
		return float32(0.5 * float64(x) * (1 + erf(float64(x)/math.Sqrt2)))
	},
	"gelu_new":          geluTanh,
	"gelu_pytorch_tanh": geluTanh,
	"relu":              func(x float32) float32 { return max(x, 0) },
}

func geluTanh(x float32) float32 {
	v := float64(x)
	return float32(0.5 * v * (1 + tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v))))
}

// layer holds one encoder layer's weights; query, key and value are
// stacked into one 3H×H matrix so that they are one product.
type layer struct {
	qkvW, qkvB         []float32
	attnOutW, attnOutB []float32
	attnLNW, attnLNB   []float32
	interW, interB     []float32
	outW, outB         []float32
	outLNW, outLNB     []float32
}

// Model is a loaded BERT encoder. It is immutable and safe for
// concurrent use.
type Model struct {
	cfg    Config
	act    func(float32) float32
	word   []float32 // vocab × H
	pos    []float32 // maxPos × H
	typ0   []float32 // H: token type 0 (every sequence is a single segment)
	embLNW []float32
	embLNB []float32
	layers []layer
	digest string
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Dimensions is the hidden size, the length of an embedding.
func (m *Model) Dimensions() int { return m.cfg.HiddenSize }

// MaxTokens is the longest sequence the model takes, [CLS] and [SEP]
// included (max_position_embeddings).
func (m *Model) MaxTokens() int { return m.cfg.MaxPositionEmbeddings }

// WeightsSHA256 is the hex SHA-256 of the weights file Load read ("" for
// a model built by FromSafetensors).
func (m *Model) WeightsSHA256() string { return m.digest }

// Load reads dir/config.json and dir/model.safetensors.
func Load(dir string) (*Model, error) {
	cfg, err := ReadConfig(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, WeightsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		var others []string
		for _, name := range []string{"pytorch_model.bin", "model.onnx", "onnx/model.onnx", "tf_model.h5"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				others = append(others, name)
			}
		}
		if len(others) > 0 {
			return nil, fmt.Errorf("%w: %s is missing (%s present, but only safetensors weights are read)", ErrModel, path, strings.Join(others, ", "))
		}
		return nil, fmt.Errorf("%w: %s is missing", ErrModel, path)
	}
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	f, err := safetensors.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m, err := FromSafetensors(cfg, f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m.digest = hex.EncodeToString(sum[:])
	return m, nil
}

// FromSafetensors builds a model from cfg and the tensors of f.
func FromSafetensors(cfg Config, f *safetensors.File) (*Model, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	H, I := cfg.HiddenSize, cfg.IntermediateSize
	prefix := ""
	if _, ok := f.Tensors["embeddings.word_embeddings.weight"]; !ok {
		if _, ok := f.Tensors["bert.embeddings.word_embeddings.weight"]; ok {
			prefix = "bert."
		}
	}
	var firstErr error
	get := func(name string, shape ...int) []float32 {
		if firstErr != nil {
			return nil
		}
		t, ok := f.Tensors[prefix+name]
		if !ok { // TF-converted checkpoints call LayerNorm's parameters gamma and beta
			alias := strings.NewReplacer("LayerNorm.weight", "LayerNorm.gamma", "LayerNorm.bias", "LayerNorm.beta").Replace(name)
			t, ok = f.Tensors[prefix+alias]
		}
		if !ok {
			firstErr = fmt.Errorf("%w: tensor %s%s is missing", ErrModel, prefix, name)
			return nil
		}
		if !slices.Equal(t.Shape, shape) {
			firstErr = fmt.Errorf("%w: tensor %s%s has shape %v, config.json implies %v", ErrModel, prefix, name, t.Shape, shape)
			return nil
		}
		v, err := t.Float32s()
		if err != nil {
			firstErr = fmt.Errorf("%w: tensor %s%s: %v", ErrModel, prefix, name, err)
		}
		return v
	}
	m := &Model{cfg: cfg, act: activations[cfg.HiddenAct]}
	m.word = get("embeddings.word_embeddings.weight", cfg.VocabSize, H)
	m.pos = get("embeddings.position_embeddings.weight", cfg.MaxPositionEmbeddings, H)
	if typ := get("embeddings.token_type_embeddings.weight", cfg.TypeVocabSize, H); typ != nil {
		m.typ0 = typ[:H]
	}
	m.embLNW = get("embeddings.LayerNorm.weight", H)
	m.embLNB = get("embeddings.LayerNorm.bias", H)
	for l := range cfg.NumHiddenLayers {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		var ly layer
		ly.qkvW = slices.Concat(
			get(p+"attention.self.query.weight", H, H),
			get(p+"attention.self.key.weight", H, H),
			get(p+"attention.self.value.weight", H, H))
		ly.qkvB = slices.Concat(
			get(p+"attention.self.query.bias", H),
			get(p+"attention.self.key.bias", H),
			get(p+"attention.self.value.bias", H))
		ly.attnOutW = get(p+"attention.output.dense.weight", H, H)
		ly.attnOutB = get(p+"attention.output.dense.bias", H)
		ly.attnLNW = get(p+"attention.output.LayerNorm.weight", H)
		ly.attnLNB = get(p+"attention.output.LayerNorm.bias", H)
		ly.interW = get(p+"intermediate.dense.weight", I, H)
		ly.interB = get(p+"intermediate.dense.bias", I)
		ly.outW = get(p+"output.dense.weight", H, I)
		ly.outB = get(p+"output.dense.bias", H)
		ly.outLNW = get(p+"output.LayerNorm.weight", H)
		ly.outLNB = get(p+"output.LayerNorm.bias", H)
		m.layers = append(m.layers, ly)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return m, nil
}

// Forward returns the last hidden states of each sequence: for sequence
// i, len(seqs[i]) rows of Dimensions() values, row-major. Sequences are
// token ids with [CLS] and [SEP] already in place, at most MaxTokens()
// long.
func (m *Model) Forward(seqs [][]int32) ([][]float32, error) {
	H := m.cfg.HiddenSize
	offs := make([]int, len(seqs)+1)
	for i, s := range seqs {
		if len(s) == 0 || len(s) > m.cfg.MaxPositionEmbeddings {
			return nil, fmt.Errorf("bert: sequence %d has %d tokens (want 1 to %d)", i, len(s), m.cfg.MaxPositionEmbeddings)
		}
		for _, id := range s {
			if id < 0 || int(id) >= m.cfg.VocabSize {
				return nil, fmt.Errorf("bert: sequence %d: token id %d outside the vocabulary of %d", i, id, m.cfg.VocabSize)
			}
		}
		offs[i+1] = offs[i] + len(s)
	}
	rows := offs[len(seqs)]
	x := m.encode(seqs, offs, rows)
	out := make([][]float32, len(seqs))
	for i := range seqs {
		out[i] = x[offs[i]*H : offs[i+1]*H : offs[i+1]*H]
	}
	return out, nil
}

// encode runs embeddings and every layer over the packed rows.
func (m *Model) encode(seqs [][]int32, offs []int, rows int) []float32 {
	c := m.cfg
	H, I := c.HiddenSize, c.IntermediateSize
	x := make([]float32, rows*H)
	parallelRows(rows, func(r0, r1 int) {
		for s := range seqs {
			lo, hi := max(r0, offs[s]), min(r1, offs[s+1])
			for r := lo; r < hi; r++ {
				p := r - offs[s]
				id := int(seqs[s][p])
				row := x[r*H : (r+1)*H]
				w, ps := m.word[id*H:(id+1)*H], m.pos[p*H:(p+1)*H]
				for j := range row {
					row[j] = w[j] + ps[j] + m.typ0[j]
				}
				layerNorm(row, m.embLNW, m.embLNB, c.LayerNormEps)
			}
		}
	})
	qkv := make([]float32, rows*3*H)
	ctx := make([]float32, rows*H)
	tmp := make([]float32, rows*H)
	inter := make([]float32, rows*I)
	for _, ly := range m.layers {
		matMulT(qkv, x, ly.qkvW, rows, 3*H, H, ly.qkvB)
		m.attention(ctx, qkv, offs)
		matMulT(tmp, ctx, ly.attnOutW, rows, H, H, ly.attnOutB)
		addNorm(x, tmp, ly.attnLNW, ly.attnLNB, rows, H, c.LayerNormEps)
		matMulT(inter, x, ly.interW, rows, I, H, ly.interB)
		parallelRows(rows, func(r0, r1 int) {
			for i := r0 * I; i < r1*I; i++ {
				inter[i] = m.act(inter[i])
			}
		})
		matMulT(tmp, inter, ly.outW, rows, H, I, ly.outB)
		addNorm(x, tmp, ly.outLNW, ly.outLNB, rows, H, c.LayerNormEps)
	}
	return x
}

// attentionScratch is the per-task working memory of attention.
type attentionScratch struct{ q, k, vt, p, o []float32 }

var scratchPool = sync.Pool{New: func() any { return new(attentionScratch) }}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// attention computes multi-head self-attention for every sequence and
// head: ctx = softmax(Q Kᵀ / √d) V, each sequence attending only to its
// own tokens. qkv rows hold [Q | K | V] for each token.
func (m *Model) attention(ctx, qkv []float32, offs []int) {
	H, heads := m.cfg.HiddenSize, m.cfg.NumAttentionHeads
	d := H / heads
	scale := float32(1 / math.Sqrt(float64(d)))
	nseq := len(offs) - 1
	parallel(nseq*heads, func(t int) {
		s, h := t/heads, t%heads
		o, L := offs[s], offs[s+1]-offs[s]
		sc := scratchPool.Get().(*attentionScratch)
		defer scratchPool.Put(sc)
		sc.q, sc.k, sc.vt = grow(sc.q, L*d), grow(sc.k, L*d), grow(sc.vt, d*L)
		sc.p, sc.o = grow(sc.p, L*L), grow(sc.o, L*d)
		for i := range L {
			row := qkv[(o+i)*3*H:]
			copy(sc.q[i*d:(i+1)*d], row[h*d:])
			copy(sc.k[i*d:(i+1)*d], row[H+h*d:])
			v := row[2*H+h*d : 2*H+(h+1)*d]
			for j, val := range v {
				sc.vt[j*L+i] = val
			}
		}
		tileKernel(sc.p, sc.q, sc.k, L, d, 0, L, 0, L, nil)
		for i := range L {
			softmax(sc.p[i*L:(i+1)*L], scale)
		}
		tileKernel(sc.o, sc.p, sc.vt, d, L, 0, L, 0, d, nil)
		for i := range L {
			copy(ctx[(o+i)*H+h*d:(o+i)*H+(h+1)*d], sc.o[i*d:(i+1)*d])
		}
	})
}

// softmax replaces row with softmax(row · scale).
func softmax(row []float32, scale float32) {
	mx := float32(math.Inf(-1))
	for i := range row {
		row[i] *= scale
		mx = max(mx, row[i])
	}
	var sum float64
	for i, v := range row {
		e := exp(float64(v - mx))
		row[i] = float32(e)
		sum += e
	}
	inv := float32(1 / sum)
	for i := range row {
		row[i] *= inv
	}
}

// addNorm sets x = LayerNorm(x + y) row by row.
func addNorm(x, y, w, b []float32, rows, H int, eps float64) {
	parallelRows(rows, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			row := x[r*H : (r+1)*H]
			for j, v := range y[r*H : (r+1)*H] {
				row[j] += v
			}
			layerNorm(row, w, b, eps)
		}
	})
}

// layerNorm normalises row in place (LayerNorm).
func layerNorm(row, w, b []float32, eps float64) { LayerNorm(row, row, w, b, eps) }

// parallelRows splits rows into about two chunks per core.
func parallelRows(rows int, f func(r0, r1 int)) {
	chunk := max(1, (rows+2*maxWorkers()-1)/(2*maxWorkers()))
	tasks := (rows + chunk - 1) / chunk
	parallel(tasks, func(t int) {
		f(t*chunk, min((t+1)*chunk, rows))
	})
}
