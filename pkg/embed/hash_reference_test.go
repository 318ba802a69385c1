package embed

import (
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// referenceVector is the hash embedder as first written (a Go map per
// text, no stem cache): the optimised Vector must give the same vectors,
// or every index built with hash-v1 would silently change meaning.
func referenceVector(h *Hash, text string) []float32 {
	p := h.p
	feats := make(map[uint64]referenceFeature, 256)
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

// referenceFeature is one hashed feature of a text: how often it occurs and
// the weight of its kind.
type referenceFeature struct {
	n, w float64
}

// TestHashVectorMatchesReference compares Vector with referenceVector on
// texts that exercise repeated words and n-grams, a feature table that must
// grow, non-ASCII words, stop words and empty input, also from several
// goroutines at once (the pooled tables and the stem cache are shared).
func TestHashVectorMatchesReference(t *testing.T) {
	long := strings.Repeat("Photosynthesis converts light energy; chlorophyll absorbs photons. ", 300)
	var many strings.Builder
	for i := range 5000 {
		many.WriteString(string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26)) + "x ")
	}
	texts := []struct {
		name, text string
	}{
		{name: "empty", text: ""},
		{name: "stop words only", text: "the and of to"},
		{name: "sentence", text: "The mitochondria is the powerhouse of the cell."},
		{name: "repeats", text: "cat cat cat dog cats dogs catlike"},
		{name: "non-ASCII", text: "Größenordnung café naïve façade 東京 données Москва"},
		{name: "long repeated", text: long},
		{name: "many distinct words", text: many.String()},
		{name: "long token", text: strings.Repeat("x", 200) + " antidisestablishmentarianism"},
	}
	for _, dim := range []int{16, 768} {
		h, err := NewHash(dim)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, tc := range texts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 3 { // the second and third rounds use the stem cache
					got, want := h.Vector(tc.text), referenceVector(h, tc.text)
					if len(got) != len(want) {
						t.Errorf("dim %d, %s: %d values, want %d", dim, tc.name, len(got), len(want))
						return
					}
					for i := range got {
						if math.Abs(float64(got[i]-want[i])) > 1e-6 {
							t.Errorf("dim %d, %s: value %d is %v, want %v", dim, tc.name, i, got[i], want[i])
							return
						}
					}
				}
			}()
		}
		wg.Wait()
	}
}
