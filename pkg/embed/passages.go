package embed

import (
	"context"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/docrepo/docrepo/pkg/embed/wordpiece"
)

// Passage windows of the hash embedder, in words (runs of letters and
// digits, stop words included). The hash embedder has no input limit; the
// windows keep a long document's vectors about its parts, so that a
// subject covered in one section of a long text is not averaged away by
// the rest. A text longer than a window is cut into windows of equal
// length (at most HashPassageWords, sharing at least HashPassageOverlap
// words), not into full windows and a short remainder: a remainder of a
// few words embeds to a noisy vector that is spuriously near queries.
//
// On SciFact (abstracts of about 200 words; TestSciFactHashPassages),
// vector-only nDCG@10 with each document scored by its nearest passage:
// one vector per document 0.547; equal windows of 64 words 0.554, 96
// 0.567, 128 0.571, 160 0.563, 192 0.549, 256 0.529; full windows and a
// remainder (passage.Split) of 128 words 0.543. 128 words is about a
// paragraph.
const (
	HashPassageWords   = 128
	HashPassageOverlap = HashPassageWords / 4
)

// DefaultMaxPassages bounds the passages embedded per document: 64
// windows cover about 6,000 words with the hash embedder (64 × 96 new
// words: as much as the one vector of a document's first 32 KiB covered
// before passages) and about 12,000 tokens with a 256-token local model;
// text beyond them is found by full-text search but has no vector. Each
// passage costs 4 bytes per dimension in memory (3 KiB at 768).
const DefaultMaxPassages = 64

// Passage is one window of a text and its vector.
type Passage struct {
	// Start and End are the byte span of the text the passage covers.
	Start, End int
	Vector     []float32
}

// PassageEmbedder is implemented by embedders that embed a long text as
// overlapping passages (pkg/embed/passage) rather than one vector of its
// beginning. Hash and Local do.
type PassageEmbedder interface {
	// EmbedPassages returns, per text, its passages in order: at least
	// one (one for an empty text), at most maxPassages (0: no limit),
	// together covering the text or, when the limit cuts it, its
	// beginning (the use embedder leaves out windows without a content
	// word when a text has others). A text longer than maxPassages windows is not read past
	// them.
	EmbedPassages(ctx context.Context, texts []string, maxPassages int) ([][]Passage, error)
}

var (
	_ PassageEmbedder = (*Hash)(nil)
	_ PassageEmbedder = (*Local)(nil)
)

// Passages embeds each text as passages: with e's EmbedPassages where it
// has one, otherwise as a single passage of the text's first maxBytes
// bytes (cut at a rune boundary; 0: all of it), which is all an embedder
// without a known window can be given safely.
func Passages(ctx context.Context, e Embedder, texts []string, maxPassages, maxBytes int) ([][]Passage, error) {
	if p, ok := e.(PassageEmbedder); ok {
		return p.EmbedPassages(ctx, texts, maxPassages)
	}
	cut := make([]string, len(texts))
	for i, t := range texts {
		cut[i] = truncateUTF8(t, maxBytes)
	}
	vecs, err := e.Embed(ctx, cut)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("embedder %s returned %d vectors for %d texts", e.Name(), len(vecs), len(texts))
	}
	out := make([][]Passage, len(texts))
	for i, v := range vecs {
		out[i] = []Passage{{Start: 0, End: len(cut[i]), Vector: v}}
	}
	return out, nil
}

// truncateUTF8 cuts s to at most n bytes (n > 0) at a rune boundary.
func truncateUTF8(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// EmbedPassages implements PassageEmbedder: windows of equal length, at
// most HashPassageWords words, sharing at least HashPassageOverlap, each
// embedded like a text of its own (a text of at most one window gives its
// Vector).
func (h *Hash) EmbedPassages(ctx context.Context, texts []string, maxPassages int) ([][]Passage, error) {
	return h.passages(ctx, texts, maxPassages, HashPassageWords, HashPassageOverlap)
}

// passages embeds windows of at most size words sharing overlap. With
// maxPassages, a text is read up to the words that many full windows
// cover.
func (h *Hash) passages(ctx context.Context, texts []string, maxPassages, size, overlap int) ([][]Passage, error) {
	out := make([][]Passage, len(texts))
	cover := 0
	if maxPassages > 0 {
		cover = maxPassages*(size-overlap) + overlap
	}
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		words := wordSpans(t, cover)
		ws := evenWindows(len(words), size, overlap)
		ps := make([]Passage, len(ws))
		for j, w := range ws {
			start, end := 0, 0
			if w[1] > w[0] {
				start, end = words[w[0]].Start, words[w[1]-1].End
			}
			ps[j] = Passage{Start: start, End: end, Vector: h.Vector(t[start:end])}
		}
		out[i] = ps
	}
	return out, nil
}

// evenWindows cuts n words into the fewest windows of at most size words
// that share at least overlap (0 ≤ overlap < size), all of the same
// length L = ⌈(n + (k−1)·overlap) / k⌉ for k windows, spread evenly
// from the first word to the last: [first, last) word indexes. n = 0
// gives one empty window.
func evenWindows(n, size, overlap int) [][2]int {
	if n <= size {
		return [][2]int{{0, n}}
	}
	stride := size - overlap
	k := (n - overlap + stride - 1) / stride
	l := (n + (k-1)*overlap + k - 1) / k
	out := make([][2]int, k)
	for j := range k {
		// Starts rounded to the nearest word: the last ends at n.
		first := (2*j*(n-l) + (k - 1)) / (2 * (k - 1))
		out[j] = [2]int{first, first + l}
	}
	return out
}

// wordLimit bounds the tokens that maxPassages windows of size can
// reach, plus one so that the last window's end is placed as it would be
// in the whole text; 0 (no limit) for maxPassages 0.
func wordLimit(maxPassages, size int) int {
	if maxPassages <= 0 {
		return 0
	}
	return maxPassages*size + 1
}

// wordSpans returns the byte spans of the words of text as the hash
// embedder sees them (runs of letters and digits), at most limit of them
// (0: all), as tokens for passage.Split.
func wordSpans(text string, limit int) []wordpiece.Token {
	var out []wordpiece.Token
	start := -1
	for i, r := range text {
		in := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			out = append(out, wordpiece.Token{Start: start, End: i})
			start = -1
			if limit > 0 && len(out) >= limit {
				return out
			}
		}
	}
	if start >= 0 {
		out = append(out, wordpiece.Token{Start: start, End: len(text)})
	}
	return out
}
