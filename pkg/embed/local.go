package embed

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/docrepo/docrepo/pkg/embed/bert"
	"github.com/docrepo/docrepo/pkg/embed/passage"
	"github.com/docrepo/docrepo/pkg/embed/wordpiece"
)

// Local defaults.
const (
	// DefaultLocalMaxTokens is the sequence length used when the model
	// directory does not give one (sentence_bert_config.json's
	// max_seq_length), capped by the model's max_position_embeddings.
	DefaultLocalMaxTokens = 512
	// DefaultBatchTokens is the number of tokens run through the encoder
	// at once (about 30 MB of activations for a 384-wide model).
	DefaultBatchTokens = 2048
)

// Files of a sentence-transformers model directory that NewLocal reads
// besides the encoder's and the tokenizer's, all optional.
const (
	stModules   = "modules.json"
	stPooling   = "1_Pooling/config.json"
	stConfig    = "sentence_bert_config.json"
	stPrompts   = "config_sentence_transformers.json"
	minWindow   = 8 // tokens a passage window must hold at least
	digestBytes = 8 // of the identity's version digest
)

// LocalConfig configures the local transformer embedder.
type LocalConfig struct {
	// ModelDir holds config.json, model.safetensors and tokenizer.json
	// (or vocab.txt) of a BERT-family sentence-embedding model, as
	// published by sentence-transformers, BAAI (bge), intfloat (e5) or
	// thenlper (gte). Required.
	ModelDir string
	// Pooling is "mean" or "cls"; empty means the model directory's
	// 1_Pooling/config.json, or mean without one.
	Pooling string
	// QueryPrefix and PassagePrefix are put before every query and
	// every document passage; empty means the "query" and "passage" (or
	// "document") prompts of config_sentence_transformers.json, or none.
	// e5 models want "query: " and "passage: ".
	QueryPrefix, PassagePrefix string
	// MaxTokens is the longest sequence given to the model, [CLS] and
	// [SEP] included; 0 means sentence_bert_config.json's
	// max_seq_length, or DefaultLocalMaxTokens, at most the model's
	// max_position_embeddings.
	MaxTokens int
	// Overlap is the number of tokens consecutive passages share (0: a
	// quarter of the window).
	Overlap int
	// BatchTokens is the number of tokens per forward pass (0:
	// DefaultBatchTokens).
	BatchTokens int
}

// Local is a sentence-embedding transformer run in the process: the
// model's WordPiece tokenizer, the BERT encoder of package bert, the
// model's pooling and L2 normalisation. It is safe for concurrent use.
type Local struct {
	tok      *wordpiece.Tokenizer
	model    *bert.Model
	pooling  bert.Pooling
	queryPre []int32 // token ids of the query prefix
	passPre  []int32 // token ids of the passage prefix
	info     LocalInfo
	id       Identity
}

// LocalInfo describes a loaded local embedder, for logs and status.
type LocalInfo struct {
	Dir            string
	Pooling        string
	MaxTokens      int
	Window         int // passage tokens per window, without [CLS], [SEP] and prefix
	Overlap        int
	QueryPrefix    string
	PassagePrefix  string
	BatchTokens    int
	Kernel         string // the encoder's matrix kernel
	WeightsSHA256  string
	Layers, Hidden int
}

// NewLocal loads the model in cfg.ModelDir. A missing directory or file
// is an ErrConfig error that names it.
func NewLocal(cfg LocalConfig) (*Local, error) {
	dir := cfg.ModelDir
	if err := checkModelDir(dir); err != nil {
		return nil, err
	}
	model, tok, st, err := loadLocalModel(dir)
	if err != nil {
		return nil, err
	}
	pooling, err := localPooling(cfg.Pooling, st.pooling)
	if err != nil {
		return nil, err
	}
	l := &Local{tok: tok, model: model, pooling: pooling}
	qp, pp := cmp.Or(cfg.QueryPrefix, st.queryPrompt), cmp.Or(cfg.PassagePrefix, st.passagePrompt)
	l.queryPre, l.passPre = tok.IDs(qp), tok.IDs(pp)
	maxTokens, err := localMaxTokens(cfg.MaxTokens, st.maxSeqLength, model.MaxTokens())
	if err != nil {
		return nil, err
	}
	window, overlap, err := passageWindow(maxTokens, max(len(l.queryPre), len(l.passPre)), cfg.Overlap)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	c := model.Config()
	l.info = LocalInfo{
		Dir: abs, Pooling: l.pooling.String(), MaxTokens: maxTokens, Window: window, Overlap: overlap,
		QueryPrefix: qp, PassagePrefix: pp, BatchTokens: max(cmp.Or(cfg.BatchTokens, DefaultBatchTokens), maxTokens),
		Kernel: bert.Kernel(), WeightsSHA256: model.WeightsSHA256(), Layers: c.NumHiddenLayers, Hidden: c.HiddenSize,
	}
	version, err := localVersion(dir, l.info)
	if err != nil {
		return nil, fmt.Errorf("%w: local model: %v", ErrConfig, err)
	}
	l.id = Identity{Kind: KindLocal, Model: filepath.Base(abs), Version: version, Dimensions: model.Dimensions()}
	return l, nil
}

// checkModelDir fails with an ErrConfig error naming what is wrong unless
// dir is a directory holding the encoder's config and weights and a
// tokenizer file.
func checkModelDir(dir string) error {
	if strings.TrimSpace(dir) == "" {
		return fmt.Errorf("%w: the local embedder needs a model directory", ErrConfig)
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: local model directory %s does not exist", ErrConfig, dir)
	case err != nil:
		return fmt.Errorf("%w: local model directory: %v", ErrConfig, err)
	case !st.IsDir():
		return fmt.Errorf("%w: local model directory %s is not a directory", ErrConfig, dir)
	}
	var missing []string
	for _, names := range [][]string{{bert.ConfigFile}, {bert.WeightsFile}, {wordpiece.TokenizerJSON, wordpiece.VocabTxt}} {
		found := false
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
				found = true
			}
		}
		if !found {
			missing = append(missing, strings.Join(names, " or "))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: local model directory %s lacks %s", ErrConfig, dir, strings.Join(missing, ", "))
	}
	return nil
}

// loadLocalModel reads the encoder, the tokenizer (whose vocabulary must
// fit the encoder's) and the sentence-transformers settings of dir.
func loadLocalModel(dir string) (*bert.Model, *wordpiece.Tokenizer, stSettings, error) {
	model, err := bert.Load(dir)
	if err != nil {
		return nil, nil, stSettings{}, fmt.Errorf("%w: local model: %v", ErrConfig, err)
	}
	tok, err := wordpiece.Load(dir)
	if err != nil {
		return nil, nil, stSettings{}, fmt.Errorf("%w: local model: %v", ErrConfig, err)
	}
	if tok.VocabSize() > model.Config().VocabSize {
		return nil, nil, stSettings{}, fmt.Errorf("%w: local model %s: the tokenizer has %d tokens, the model's vocab_size is %d", ErrConfig, dir, tok.VocabSize(), model.Config().VocabSize)
	}
	st, err := readSentenceTransformers(dir)
	if err != nil {
		return nil, nil, stSettings{}, fmt.Errorf("%w: local model: %v", ErrConfig, err)
	}
	return model, tok, st, nil
}

// localPooling is the configured pooling, else the directory's, else mean.
func localPooling(configured, fromDir string) (bert.Pooling, error) {
	p, err := bert.ParsePooling(cmp.Or(configured, fromDir, "mean"))
	if err != nil {
		return p, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return p, nil
}

// localMaxTokens is the longest sequence given to the model: the
// configured one, which may not exceed the model's positions, else the
// directory's max_seq_length or DefaultLocalMaxTokens, capped by them.
func localMaxTokens(configured, fromDir, positions int) (int, error) {
	maxTokens := cmp.Or(configured, fromDir, DefaultLocalMaxTokens)
	if configured == 0 {
		maxTokens = min(maxTokens, positions)
	}
	if maxTokens > positions {
		return 0, fmt.Errorf("%w: max tokens %d is more than the model's %d positions", ErrConfig, maxTokens, positions)
	}
	return maxTokens, nil
}

// passageWindow is the number of text tokens a sequence of maxTokens holds
// after [CLS], [SEP] and the longer prefix, and the overlap of consecutive
// windows (configured, else a quarter of the window; at most half).
func passageWindow(maxTokens, prefixTokens, configuredOverlap int) (window, overlap int, err error) {
	window = maxTokens - 2 - prefixTokens
	if window < minWindow {
		return 0, 0, fmt.Errorf("%w: max tokens %d leaves %d tokens for text after [CLS], [SEP] and the prefixes (want at least %d)", ErrConfig, maxTokens, window, minWindow)
	}
	overlap = cmp.Or(configuredOverlap, window/4)
	if overlap < 0 || overlap > window/2 {
		return 0, 0, fmt.Errorf("%w: passage overlap %d outside [0, %d]", ErrConfig, overlap, window/2)
	}
	return window, overlap, nil
}

// stSettings are what a sentence-transformers directory says about how
// the model is used.
type stSettings struct {
	pooling                    string
	maxSeqLength               int
	queryPrompt, passagePrompt string
}

func readSentenceTransformers(dir string) (stSettings, error) {
	var s stSettings
	readJSON := func(name string, v any) (bool, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return false, fmt.Errorf("%s: %v", filepath.Join(dir, name), err)
		}
		return true, nil
	}
	poolingPath := stPooling
	var modules []struct {
		Path string `json:"path"`
		Type string `json:"type"`
	}
	if _, err := readJSON(stModules, &modules); err != nil {
		return s, err
	}
	for _, m := range modules {
		if strings.HasSuffix(m.Type, ".Pooling") && m.Path != "" {
			poolingPath = filepath.Join(m.Path, "config.json")
		}
	}
	var pc map[string]any
	ok, err := readJSON(poolingPath, &pc)
	if err != nil {
		return s, err
	}
	if ok {
		var modes []string
		for k, v := range pc {
			if on, isBool := v.(bool); isBool && on && strings.HasPrefix(k, "pooling_mode_") {
				modes = append(modes, strings.TrimPrefix(k, "pooling_mode_"))
			}
		}
		switch {
		case len(modes) == 1 && modes[0] == "cls_token":
			s.pooling = "cls"
		case len(modes) == 1 && modes[0] == "mean_tokens":
			s.pooling = "mean"
		default:
			return s, fmt.Errorf("%s: pooling %v is not supported (mean_tokens or cls_token; or set the pooling explicitly)", filepath.Join(dir, poolingPath), modes)
		}
	}
	var sb struct {
		MaxSeqLength int `json:"max_seq_length"`
	}
	if _, err := readJSON(stConfig, &sb); err != nil {
		return s, err
	}
	s.maxSeqLength = sb.MaxSeqLength
	var prompts struct {
		Prompts map[string]string `json:"prompts"`
	}
	if _, err := readJSON(stPrompts, &prompts); err != nil {
		return s, err
	}
	s.queryPrompt = prompts.Prompts["query"]
	s.passagePrompt = prompts.Prompts["passage"]
	if s.passagePrompt == "" {
		s.passagePrompt = prompts.Prompts["document"]
	}
	return s, nil
}

// localVersion digests everything that decides a stored vector: the
// weights, config.json, the tokenizer file, pooling, passage prefix and
// window.
func localVersion(dir string, info LocalInfo) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "docrepo local embedder v1\nweights %s\n", info.WeightsSHA256)
	for _, name := range []string{bert.ConfigFile, wordpiece.TokenizerJSON, wordpiece.VocabTxt} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "%s %x\n", name, sum)
	}
	fmt.Fprintf(h, "pooling %s\npassage prefix %q\nmax tokens %d\noverlap %d\n", info.Pooling, info.PassagePrefix, info.MaxTokens, info.Overlap)
	return hex.EncodeToString(h.Sum(nil)[:digestBytes]), nil
}

// Dimensions implements Embedder.
func (l *Local) Dimensions() int { return l.model.Dimensions() }

// Name implements Embedder: "local:<model directory name>@<version>".
func (l *Local) Name() string { return "local:" + l.id.Model + "@" + l.id.Version }

// Identity implements Identifier.
func (l *Local) Identity() Identity { return l.id }

// Info describes the loaded model and settings.
func (l *Local) Info() LocalInfo { return l.info }

// Embed implements Embedder for documents: each text, after the passage
// prefix, is cut to its first passage window (EmbedPassages embeds all of
// a long text).
func (l *Local) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	seqs := make([][]int32, len(texts))
	for i, t := range texts {
		toks := l.head(t, l.info.Window)
		w := passage.Split(toks, l.info.Window, l.info.Overlap)[0]
		seqs[i] = l.sequence(l.passPre, toks[w.First:w.Last])
	}
	return l.run(ctx, seqs)
}

// EmbedQueries implements QueryEmbedder: each query, after the query
// prefix, truncated to the window.
func (l *Local) EmbedQueries(ctx context.Context, queries []string) ([][]float32, error) {
	seqs := make([][]int32, len(queries))
	for i, q := range queries {
		toks := l.head(q, l.info.Window)
		seqs[i] = l.sequence(l.queryPre, toks[:min(len(toks), l.info.Window)])
	}
	return l.run(ctx, seqs)
}

// EmbedPassages implements PassageEmbedder: each text as overlapping
// windows of the model's window (one passage for a text that fits it,
// and for an empty one), at most maxPassages of them (0: no limit).
func (l *Local) EmbedPassages(ctx context.Context, texts []string, maxPassages int) ([][]Passage, error) {
	var seqs [][]int32
	out := make([][]Passage, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var toks []wordpiece.Token
		if limit := wordLimit(maxPassages, l.info.Window); limit > 0 {
			toks = l.head(t, limit)
		} else {
			toks = l.tok.Tokenize(t)
		}
		ws := passage.Split(toks, l.info.Window, l.info.Overlap)
		if maxPassages > 0 && len(ws) > maxPassages {
			ws = ws[:maxPassages]
		}
		for _, w := range ws {
			seqs = append(seqs, l.sequence(l.passPre, toks[w.First:w.Last]))
			out[i] = append(out[i], Passage{Start: w.Start, End: w.End})
		}
	}
	vecs, err := l.run(ctx, seqs)
	if err != nil {
		return nil, err
	}
	k := 0
	for i := range out {
		for j := range out[i] {
			out[i][j].Vector = vecs[k]
			k++
		}
	}
	return out, nil
}

// head returns the tokens of text, or at least the first n+1 of them
// (enough to place the first window's end), without tokenizing all of a
// long text: it tokenizes growing prefixes cut at ASCII whitespace, where
// no token can straddle the cut. (Not at any Unicode space: the
// normaliser deletes some, such as U+0085, which then join words.)
func (l *Local) head(text string, n int) []wordpiece.Token {
	for limit := 16 * (n + 1); limit < len(text); limit *= 2 {
		cut := strings.LastIndexAny(text[:limit], " \t\n\r")
		if cut <= 0 {
			continue
		}
		if toks := l.tok.Tokenize(text[:cut]); len(toks) > n {
			return toks
		}
	}
	return l.tok.Tokenize(text)
}

// sequence is [CLS] prefix tokens [SEP].
func (l *Local) sequence(prefix []int32, toks []wordpiece.Token) []int32 {
	s := make([]int32, 0, len(prefix)+len(toks)+2)
	s = append(s, l.tok.CLS())
	s = append(s, prefix...)
	for _, t := range toks {
		s = append(s, t.ID)
	}
	return append(s, l.tok.SEP())
}

// run embeds sequences in batches of at most BatchTokens tokens. A
// sequence's vector does not depend on the batch it is in.
func (l *Local) run(ctx context.Context, seqs [][]int32) ([][]float32, error) {
	out := make([][]float32, 0, len(seqs))
	for start := 0; start < len(seqs); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end, tokens := start, 0
		for end < len(seqs) && (end == start || tokens+len(seqs[end]) <= l.info.BatchTokens) {
			tokens += len(seqs[end])
			end++
		}
		vecs, err := l.model.Embed(seqs[start:end], l.pooling)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
		start = end
	}
	return out, nil
}
