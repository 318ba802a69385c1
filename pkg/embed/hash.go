package embed

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
	"github.com/cespare/xxhash/v2"
)

// DefaultHashDimensions is the hash embedder's default vector length.
const DefaultHashDimensions = 768

// Hash limits.
const (
	minHashDimensions = 16
	maxHashDimensions = 1 << 16
	// maxHashTokens bounds the words of one text that are embedded; a
	// document's first words carry its subject, and the cost stays bounded.
	maxHashTokens = 20000
)

// hashParams are the tunable parts of the hash embedder's design.
type hashParams struct {
	dim        int
	wordWeight float64 // weight of stemmed word features
	bigram     float64 // weight of stemmed word-pair features (0 = none)
	gramWeight float64 // weight of character n-gram features
	minN, maxN int     // character n-gram sizes
}

func defaultHashParams(dim int) hashParams {
	return hashParams{dim: dim, wordWeight: 1, bigram: 0, gramWeight: 0.35, minN: 3, maxN: 4}
}

// Hash is the built-in embedder: deterministic feature hashing, no model
// and no network. See the package documentation for the design.
type Hash struct {
	p hashParams
}

// NewHash returns a hash embedder producing vectors of dim values.
func NewHash(dim int) (*Hash, error) {
	if dim < minHashDimensions || dim > maxHashDimensions {
		return nil, fmt.Errorf("%w: hash dimensions %d out of range [%d, %d]", ErrConfig, dim, minHashDimensions, maxHashDimensions)
	}
	return &Hash{p: defaultHashParams(dim)}, nil
}

// Dimensions implements Embedder.
func (h *Hash) Dimensions() int { return h.p.dim }

// Name implements Embedder.
func (h *Hash) Name() string { return fmt.Sprintf("hash-v1-%d", h.p.dim) }

// Identity implements Identifier.
func (h *Hash) Identity() Identity {
	return Identity{Kind: KindHash, Model: "hash", Version: "v1", Dimensions: h.p.dim}
}

// Embed implements Embedder. It never fails except on a done ctx.
func (h *Hash) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = h.Vector(t)
	}
	return out, nil
}

// Vector embeds one text. The result has unit L2 norm, or is all zeros for
// a text without words.
func (h *Hash) Vector(text string) []float32 {
	p := h.p
	feats := make(map[uint64]feature, 256)
	add := func(key uint64, weight float64) {
		f := feats[key]
		f.n++
		f.w = weight
		feats[key] = f
	}
	words := tokenize(text, maxHashTokens)
	prevStem := ""
	var starts []int
	stems := map[string]string{} // words repeat; stemming is the costly part
	for _, w := range words {
		if stopWords[w] {
			prevStem = ""
			continue
		}
		stem, ok := stems[w]
		if !ok {
			stem = stemWord(w)
			stems[w] = stem
		}
		add(xxhash.Sum64String(stem)^saltWord, p.wordWeight)
		if p.bigram > 0 && prevStem != "" {
			add(xxhash.Sum64String(prevStem+" "+stem)^saltBigram, p.bigram)
		}
		prevStem = stem
		if p.gramWeight > 0 {
			// Character n-grams of "<word>": the marks make prefixes and
			// suffixes features of their own. Substrings of one string,
			// cut at rune boundaries, so no allocation per n-gram.
			marked := "<" + w + ">"
			starts = starts[:0]
			for i := range marked {
				starts = append(starts, i)
			}
			starts = append(starts, len(marked))
			runes := len(starts) - 1
			for n := p.minN; n <= p.maxN; n++ {
				for i := 0; i+n <= runes; i++ {
					add(xxhash.Sum64String(marked[starts[i]:starts[i+n]])^saltGram, p.gramWeight)
				}
			}
		}
	}
	vec := make([]float64, p.dim)
	for key, f := range feats {
		// Sublinear term frequency: repeated features count, but a word
		// said ten times is not ten times as important.
		weight := f.w * (1 + math.Log(f.n))
		idx := key % uint64(p.dim)
		if key>>63 == 1 {
			// The sign bit makes collisions cancel out on average
			// instead of piling up (signed feature hashing).
			weight = -weight
		}
		vec[idx] += weight
	}
	var norm float64
	for _, v := range vec {
		norm += v * v
	}
	out := make([]float32, p.dim)
	if norm == 0 {
		return out
	}
	inv := 1 / math.Sqrt(norm)
	for i, v := range vec {
		out[i] = float32(v * inv)
	}
	return out
}

// Salts keep the feature kinds apart: the word "cat" and the n-gram "cat"
// land in unrelated buckets.
const (
	saltWord   uint64 = 0x9e3779b97f4a7c15
	saltBigram uint64 = 0xc2b2ae3d27d4eb4f
	saltGram   uint64 = 0x165667b19e3779f9
)

// feature is one hashed feature of a text: how often it occurs and the
// weight of its kind.
type feature struct {
	n, w float64
}

// tokenize lowercases text and splits it into words of letters and digits.
func tokenize(text string, max int) []string {
	var words []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		words = append(words, strings.ToLower(w))
		if len(words) >= max {
			break
		}
	}
	return words
}

// stemWord applies the Snowball English stemmer (the analysis the search
// engine uses for bare words).
func stemWord(w string) string {
	env := snowballstem.NewEnv(w)
	english.Stem(env)
	return env.Current()
}

// stopWords are frequent English function words; they say nothing about a
// text's subject and would dominate an IDF-free embedding.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all also am an and any are as at be
		because been before being below between both but by can could did do does doing down during each
		few for from further had has have having he her here hers herself him himself his how however i if
		in into is it its itself just me more most my myself no nor not now of off on once only or other
		our ours ourselves out over own same she should so some such than that the their theirs them
		themselves then there these they this those through to too under until up very was we were what
		when where which while who whom why will with would you your yours yourself yourselves may might
		must shall us via whether within without upon among thus`) {
		m[w] = true
	}
	return m
}()
