package embed

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
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
func (h *Hash) Vector(text string) []float32 { return h.WeightedVector(text, nil) }

// WeightedVector is Vector with each word's features (the word and its
// character n-grams) scaled by weight(word), the lowercased word (nil:
// 1 for every word): a query's words weighted by their rarity in an
// index make a query vector whose dot product with Vector's document
// vectors is a tf-idf-like score. A feature that several words share
// takes the largest of their weights. A word weighing 0 is left out.
func (h *Hash) WeightedVector(text string, weight func(word string) float64) []float32 {
	p := h.p
	t := tables.Get().(*featureTable)
	defer tables.Put(t)
	t.reset()
	t.weighted = weight != nil
	words := tokenize(text, maxHashTokens)
	prevStem := ""
	var starts []int
	for _, w := range words {
		if stopWords[w] {
			prevStem = ""
			continue
		}
		t.weight = 1
		if weight != nil {
			if t.weight = weight(w); t.weight <= 0 {
				prevStem = ""
				continue
			}
		}
		stem := stems.stem(w)
		t.add(xxhash.Sum64String(stem)^saltWord, kindWord)
		if p.bigram > 0 && prevStem != "" {
			t.add(xxhash.Sum64String(prevStem+" "+stem)^saltBigram, kindBigram)
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
					t.add(xxhash.Sum64String(marked[starts[i]:starts[i+n]])^saltGram, kindGram)
				}
			}
		}
	}
	kindWeight := [...]float64{kindWord: p.wordWeight, kindBigram: p.bigram, kindGram: p.gramWeight}
	vec := make([]float64, p.dim)
	for i, n := range t.n {
		if n == 0 {
			continue
		}
		key := t.keys[i]
		// Sublinear term frequency: repeated features count, but a word
		// said ten times is not ten times as important.
		weight := kindWeight[t.kind[i]] * (1 + logCount(n))
		if t.weighted {
			weight *= t.scale[i]
		}
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

// Feature kinds, each with its weight in hashParams.
const (
	kindWord uint8 = iota
	kindBigram
	kindGram
)

// featureTable counts a text's hashed features: an open-addressing table
// (the keys are hashes already, so their low bits index it), reused
// through a pool. A Go map cost a third of the embedder's time.
type featureTable struct {
	keys []uint64
	n    []uint32 // occurrences; 0 marks a free slot
	kind []uint8
	used int
	// Weighted vectors only: the weight of the word being added, and
	// each feature's largest.
	weighted bool
	weight   float64
	scale    []float64
}

var tables = sync.Pool{New: func() any { return newFeatureTable(1024) }}

func newFeatureTable(size int) *featureTable {
	return &featureTable{keys: make([]uint64, size), n: make([]uint32, size), kind: make([]uint8, size), scale: make([]float64, size)}
}

func (t *featureTable) reset() {
	if t.used > 0 {
		clear(t.n)
		t.used = 0
	}
}

// add counts one occurrence of feature key. A key's kind is the kind of
// its first occurrence (the salts keep kinds apart).
func (t *featureTable) add(key uint64, kind uint8) {
	if 2*(t.used+1) > len(t.n) {
		t.grow()
	}
	i := t.slot(key)
	if t.n[i] == 0 {
		t.keys[i], t.kind[i] = key, kind
		t.used++
		t.scale[i] = 0
	}
	t.n[i]++
	if t.weighted {
		t.scale[i] = max(t.scale[i], t.weight)
	}
}

// slot returns the index of key, or of the free slot where it goes.
func (t *featureTable) slot(key uint64) uint64 {
	mask := uint64(len(t.n) - 1)
	i := key & mask
	for t.n[i] != 0 && t.keys[i] != key {
		i = (i + 1) & mask
	}
	return i
}

// grow doubles the table, keeping its features.
func (t *featureTable) grow() {
	old := *t
	*t = *newFeatureTable(2 * len(old.n))
	t.weighted, t.weight = old.weighted, old.weight
	for i, n := range old.n {
		if n != 0 {
			j := t.slot(old.keys[i])
			t.keys[j], t.n[j], t.kind[j], t.scale[j] = old.keys[i], n, old.kind[i], old.scale[i]
			t.used++
		}
	}
}

// logCount is math.Log(n), from a table for the small counts nearly all
// features have.
func logCount(n uint32) float64 {
	if n < uint32(len(logTable)) {
		return logTable[n]
	}
	return math.Log(float64(n))
}

var logTable = func() (t [64]float64) {
	for i := 1; i < len(t); i++ {
		t[i] = math.Log(float64(i))
	}
	return t
}()

// stemCache remembers the stems of words across texts: a corpus repeats
// its vocabulary, and stemming was a quarter of the embedder's time. It is
// bounded: when full it starts over.
type stemCache struct {
	mu sync.RWMutex
	m  map[string]string
}

// stemCacheSize bounds the words stemCache holds (about 4 MB).
const stemCacheSize = 1 << 16

var stems = &stemCache{m: make(map[string]string)}

func (c *stemCache) stem(w string) string {
	c.mu.RLock()
	s, ok := c.m[w]
	c.mu.RUnlock()
	if ok {
		return s
	}
	s = stemWord(w)
	if len(w) > 32 {
		return s // long tokens are rare and would crowd the cache
	}
	c.mu.Lock()
	if len(c.m) >= stemCacheSize {
		c.m = make(map[string]string)
	}
	// Copies: w and s may point into a large text the cache must not pin.
	c.m[strings.Clone(w)] = strings.Clone(s)
	c.mu.Unlock()
	return s
}

// Salts keep the feature kinds apart: the word "cat" and the n-gram "cat"
// land in unrelated buckets.
const (
	saltWord   uint64 = 0x9e3779b97f4a7c15
	saltBigram uint64 = 0xc2b2ae3d27d4eb4f
	saltGram   uint64 = 0x165667b19e3779f9
)

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
