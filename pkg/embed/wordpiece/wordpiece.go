// Package wordpiece is the tokenizer of BERT-family models: Hugging Face's
// BertNormalizer, BertPreTokenizer and WordPiece model, read from a model
// directory's tokenizer.json (or, for older models, vocab.txt).
//
// Tokenize runs, for each piece of text between added (special) tokens:
//
//  1. normalisation, rune by rune: clean text (drop NUL, U+FFFD and
//     control characters; turn whitespace into spaces), strip accents (NFD,
//     then drop nonspacing marks; on by default when lowercasing),
//     lowercase;
//  2. pre-tokenisation: split on whitespace, and make every punctuation
//     character (Unicode P, or any ASCII punctuation such as $ + < = > ^ `
//     | ~) and every CJK ideograph a word of its own;
//  3. WordPiece: each word becomes the longest vocabulary entry that
//     starts it, then the longest "##" entry that continues it, and so on;
//     a word that cannot be covered this way, or has more than
//     max_input_chars_per_word characters, becomes one [UNK].
//
// Added tokens ([CLS], [SEP], [MASK], ...) that occur literally in the
// text are matched before normalisation and kept whole, as Hugging Face's
// encode does by default. Every token carries the byte span of the
// original text it came from, so callers can cut text into passages and
// show what matched.
//
// Known differences from the Rust implementation, all at the edges of
// Unicode: "unassigned" code points are judged by Go's Unicode tables,
// which are newer than those of the unicode_categories crate, so an emoji
// added after Unicode 9 becomes [UNK] here where Hugging Face drops it;
// and combining marks are not canonically reordered (they are removed
// when accents are stripped, so this only matters with strip_accents off).
package wordpiece

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// File names Load looks for in a model directory, in this order.
const (
	TokenizerJSON   = "tokenizer.json"
	VocabTxt        = "vocab.txt"
	TokenizerConfig = "tokenizer_config.json"
)

// ErrNoTokenizer reports a model directory without a tokenizer file.
var ErrNoTokenizer = errors.New("wordpiece: no tokenizer.json or vocab.txt")

// Token is one token of a text.
type Token struct {
	ID int32
	// Start and End are the byte span of the original text the token came
	// from (for a "##" piece, the part of its word it covers).
	Start, End int
	// Continuation is true for a "##" piece, which continues the word of
	// the token before it.
	Continuation bool
}

// Options are the normaliser's switches (BertNormalizer's fields).
type Options struct {
	Lowercase bool
	// StripAccents nil means "as Lowercase".
	StripAccents *bool
	CleanText    bool
	ChineseChars bool
}

// DefaultOptions are those of bert-base-uncased and the sentence-embedding
// models derived from it.
func DefaultOptions() Options {
	return Options{Lowercase: true, CleanText: true, ChineseChars: true}
}

// Tokenizer is a loaded WordPiece tokenizer. It is immutable and safe for
// concurrent use.
type Tokenizer struct {
	vocab  map[string]int32
	tokens []string // by id ("" for ids without a token)

	lowercase, stripAccents, cleanText, chineseChars bool
	prefix                                           string // continuing-subword prefix, "##"
	maxWordChars                                     int
	maxTokenBytes                                    int // longest vocabulary entry, prefix included

	unk, cls, sep, pad int32
	added              []addedToken // matched literally in raw text, longest first
}

type addedToken struct {
	content string
	id      int32
}

// Load reads the tokenizer of the model directory dir: tokenizer.json if
// present, else vocab.txt (with tokenizer_config.json's do_lower_case,
// strip_accents and tokenize_chinese_chars, when that file exists).
func Load(dir string) (*Tokenizer, error) {
	b, err := os.ReadFile(filepath.Join(dir, TokenizerJSON))
	if err == nil {
		t, err := ParseJSON(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, TokenizerJSON), err)
		}
		return t, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, VocabTxt))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoTokenizer, dir)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	opts := DefaultOptions()
	if cb, err := os.ReadFile(filepath.Join(dir, TokenizerConfig)); err == nil {
		var tc struct {
			DoLowerCase          *bool `json:"do_lower_case"`
			StripAccents         *bool `json:"strip_accents"`
			TokenizeChineseChars *bool `json:"tokenize_chinese_chars"`
		}
		if err := json.Unmarshal(cb, &tc); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, TokenizerConfig), err)
		}
		if tc.DoLowerCase != nil {
			opts.Lowercase = *tc.DoLowerCase
		}
		opts.StripAccents = tc.StripAccents
		if tc.TokenizeChineseChars != nil {
			opts.ChineseChars = *tc.TokenizeChineseChars
		}
	}
	t, err := FromVocab(f, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, VocabTxt), err)
	}
	return t, nil
}

// FromVocab reads a vocab.txt (one token per line; the line number is the
// id) and looks up [UNK], [CLS], [SEP] and [PAD] in it; those and [MASK]
// are added tokens.
func FromVocab(r io.Reader, opts Options) (*Tokenizer, error) {
	vocab := map[string]int32{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var id int32
	for sc.Scan() {
		tok := strings.TrimRight(sc.Text(), "\r")
		if _, dup := vocab[tok]; !dup {
			vocab[tok] = id
		}
		id++
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	t := newTokenizer(vocab, opts)
	t.prefix = "##"
	t.maxWordChars = 100
	for _, s := range []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"} {
		if id, ok := vocab[s]; ok {
			t.added = append(t.added, addedToken{s, id})
		}
	}
	if err := t.setSpecials("[UNK]", "[CLS]", "[SEP]", "[PAD]"); err != nil {
		return nil, err
	}
	t.finish()
	return t, nil
}

func newTokenizer(vocab map[string]int32, opts Options) *Tokenizer {
	t := &Tokenizer{
		vocab:        vocab,
		lowercase:    opts.Lowercase,
		stripAccents: opts.Lowercase,
		cleanText:    opts.CleanText,
		chineseChars: opts.ChineseChars,
	}
	if opts.StripAccents != nil {
		t.stripAccents = *opts.StripAccents
	}
	return t
}

func (t *Tokenizer) setSpecials(unk, cls, sep, pad string) error {
	for _, s := range []struct {
		name string
		dst  *int32
	}{{unk, &t.unk}, {cls, &t.cls}, {sep, &t.sep}, {pad, &t.pad}} {
		id, ok := t.vocab[s.name]
		if !ok {
			return fmt.Errorf("wordpiece: special token %q is not in the vocabulary", s.name)
		}
		*s.dst = id
	}
	return nil
}

// finish builds the id → token table and the lookup limits.
func (t *Tokenizer) finish() {
	maxID := int32(-1)
	for tok, id := range t.vocab {
		maxID = max(maxID, id)
		t.maxTokenBytes = max(t.maxTokenBytes, len(tok))
	}
	for _, a := range t.added {
		maxID = max(maxID, a.id)
	}
	t.tokens = make([]string, maxID+1)
	for tok, id := range t.vocab {
		t.tokens[id] = tok
	}
	for _, a := range t.added {
		t.tokens[a.id] = a.content
	}
	// Longest first, so that a token containing another wins.
	for i := 1; i < len(t.added); i++ {
		for j := i; j > 0 && len(t.added[j].content) > len(t.added[j-1].content); j-- {
			t.added[j], t.added[j-1] = t.added[j-1], t.added[j]
		}
	}
}

// ParseJSON reads a Hugging Face tokenizer.json whose model is WordPiece,
// with a BertNormalizer (or none) and a BertPreTokenizer.
func ParseJSON(b []byte) (*Tokenizer, error) {
	var f struct {
		AddedTokens []struct {
			ID      int32  `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
		Normalizer *struct {
			Type               string `json:"type"`
			CleanText          bool   `json:"clean_text"`
			HandleChineseChars bool   `json:"handle_chinese_chars"`
			StripAccents       *bool  `json:"strip_accents"`
			Lowercase          bool   `json:"lowercase"`
		} `json:"normalizer"`
		PreTokenizer *struct {
			Type string `json:"type"`
		} `json:"pre_tokenizer"`
		PostProcessor *struct {
			Type   string `json:"type"`
			Single []struct {
				SpecialToken *struct {
					ID string `json:"id"`
				} `json:"SpecialToken"`
				Sequence *struct {
					ID string `json:"id"`
				} `json:"Sequence"`
			} `json:"single"`
			SpecialTokens map[string]struct {
				IDs []int32 `json:"ids"`
			} `json:"special_tokens"`
			// BertProcessing: ["[CLS]", 101].
			Cls []any `json:"cls"`
			Sep []any `json:"sep"`
		} `json:"post_processor"`
		Padding *struct {
			PadID    int32  `json:"pad_id"`
			PadToken string `json:"pad_token"`
		} `json:"padding"`
		Model struct {
			Type                    string           `json:"type"`
			UnkToken                string           `json:"unk_token"`
			ContinuingSubwordPrefix string           `json:"continuing_subword_prefix"`
			MaxInputCharsPerWord    int              `json:"max_input_chars_per_word"`
			Vocab                   map[string]int32 `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("wordpiece: %w", err)
	}
	if f.Model.Type != "WordPiece" {
		return nil, fmt.Errorf("wordpiece: model type %q is not supported (want WordPiece, as BERT-family models use)", f.Model.Type)
	}
	if len(f.Model.Vocab) == 0 {
		return nil, errors.New("wordpiece: empty vocabulary")
	}
	opts := Options{}
	if n := f.Normalizer; n != nil {
		if n.Type != "BertNormalizer" {
			return nil, fmt.Errorf("wordpiece: normalizer type %q is not supported (want BertNormalizer)", n.Type)
		}
		opts = Options{Lowercase: n.Lowercase, StripAccents: n.StripAccents, CleanText: n.CleanText, ChineseChars: n.HandleChineseChars}
	}
	if p := f.PreTokenizer; p == nil || p.Type != "BertPreTokenizer" {
		typ := "none"
		if p != nil {
			typ = p.Type
		}
		return nil, fmt.Errorf("wordpiece: pre-tokenizer %q is not supported (want BertPreTokenizer)", typ)
	}
	t := newTokenizer(f.Model.Vocab, opts)
	t.prefix = f.Model.ContinuingSubwordPrefix
	t.maxWordChars = f.Model.MaxInputCharsPerWord
	if t.maxWordChars <= 0 {
		t.maxWordChars = 100
	}
	for _, a := range f.AddedTokens {
		if a.Content != "" {
			t.added = append(t.added, addedToken{a.Content, a.ID})
		}
	}
	var ok bool
	if t.unk, ok = t.lookup(f.Model.UnkToken); !ok {
		return nil, fmt.Errorf("wordpiece: unk_token %q is not in the vocabulary", f.Model.UnkToken)
	}
	clsName, sepName := "[CLS]", "[SEP]"
	t.cls, t.sep = -1, -1
	if pp := f.PostProcessor; pp != nil {
		switch pp.Type {
		case "TemplateProcessing":
			// single must be: special, $A, special.
			s := pp.Single
			if len(s) != 3 || s[0].SpecialToken == nil || s[1].Sequence == nil || s[2].SpecialToken == nil {
				return nil, errors.New("wordpiece: post_processor template is not [CLS] $A [SEP]")
			}
			for _, x := range []struct {
				name string
				dst  *int32
			}{{s[0].SpecialToken.ID, &t.cls}, {s[2].SpecialToken.ID, &t.sep}} {
				st, found := pp.SpecialTokens[x.name]
				if !found || len(st.IDs) != 1 {
					return nil, fmt.Errorf("wordpiece: post_processor special token %q has no single id", x.name)
				}
				*x.dst = st.IDs[0]
			}
		case "BertProcessing":
			for _, x := range []struct {
				v   []any
				dst *int32
			}{{pp.Cls, &t.cls}, {pp.Sep, &t.sep}} {
				if len(x.v) != 2 {
					return nil, errors.New("wordpiece: BertProcessing cls/sep are not [token, id]")
				}
				id, isNum := x.v[1].(float64)
				if !isNum {
					return nil, errors.New("wordpiece: BertProcessing cls/sep id is not a number")
				}
				*x.dst = int32(id)
			}
		default:
			return nil, fmt.Errorf("wordpiece: post_processor type %q is not supported", pp.Type)
		}
	}
	if t.cls < 0 {
		if t.cls, ok = t.lookup(clsName); !ok {
			return nil, errors.New("wordpiece: no [CLS] token")
		}
	}
	if t.sep < 0 {
		if t.sep, ok = t.lookup(sepName); !ok {
			return nil, errors.New("wordpiece: no [SEP] token")
		}
	}
	padName := "[PAD]"
	if f.Padding != nil {
		t.pad = f.Padding.PadID
	} else if t.pad, ok = t.lookup(padName); !ok {
		t.pad = 0
	}
	t.finish()
	return t, nil
}

// lookup finds a token in the vocabulary or the added tokens.
func (t *Tokenizer) lookup(s string) (int32, bool) {
	if id, ok := t.vocab[s]; ok {
		return id, true
	}
	for _, a := range t.added {
		if a.content == s {
			return a.id, true
		}
	}
	return 0, false
}

// VocabSize is one more than the largest token id.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Token returns the text of token id ("" if there is none).
func (t *Tokenizer) Token(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// ID returns the id of a vocabulary entry or added token.
func (t *Tokenizer) ID(token string) (int32, bool) { return t.lookup(token) }

// CLS, SEP, PAD and UNK are the special token ids.
func (t *Tokenizer) CLS() int32 { return t.cls }

// SEP is the id of the separator that ends a sequence.
func (t *Tokenizer) SEP() int32 { return t.sep }

// PAD is the id of the padding token.
func (t *Tokenizer) PAD() int32 { return t.pad }

// UNK is the id of the unknown-word token.
func (t *Tokenizer) UNK() int32 { return t.unk }

// IDs returns the token ids of text, without [CLS] and [SEP].
func (t *Tokenizer) IDs(text string) []int32 {
	toks := t.Tokenize(text)
	ids := make([]int32, len(toks))
	for i, tok := range toks {
		ids[i] = tok.ID
	}
	return ids
}

// Encode returns [CLS] ids [SEP] for text, truncated (at the end) to at
// most maxLen ids in all; maxLen <= 0 means no limit.
func (t *Tokenizer) Encode(text string, maxLen int) []int32 {
	ids := t.IDs(text)
	if maxLen > 0 && len(ids) > maxLen-2 {
		ids = ids[:max(maxLen-2, 0)]
	}
	out := make([]int32, 0, len(ids)+2)
	out = append(out, t.cls)
	out = append(out, ids...)
	return append(out, t.sep)
}

// Tokenize returns the tokens of text, without [CLS] and [SEP].
func (t *Tokenizer) Tokenize(text string) []Token {
	out := make([]Token, 0, len(text)/4+1)
	var s scratch
	// next[i] is where added token i next occurs at or after pos (-1:
	// nowhere; below pos: not yet looked for), so that each is searched
	// for across the text once, however many of them it holds.
	next := make([]int, len(t.added))
	for i := range next {
		next[i] = -2
	}
	pos := 0
	for {
		best, bestAt := -1, len(text)
		for i, a := range t.added {
			if next[i] == -1 {
				continue
			}
			if next[i] < pos {
				at := strings.Index(text[pos:], a.content)
				if at < 0 {
					next[i] = -1
					continue
				}
				next[i] = pos + at
			}
			if next[i] < bestAt { // ties go to the longer token, listed first
				best, bestAt = i, next[i]
			}
		}
		out = t.tokenizeSegment(out, text[pos:bestAt], pos, &s)
		if best < 0 {
			return out
		}
		a := t.added[best]
		out = append(out, Token{ID: a.id, Start: bestAt, End: bestAt + len(a.content)})
		pos = bestAt + len(a.content)
	}
}

// scratch holds buffers reused across the segments of one text.
type scratch struct {
	runes []nrune
	word  []byte
	buf   []byte
	ends  []int // byte offset in word after each rune
}

// nrune is a normalised rune and the byte span of the original rune it
// came from.
type nrune struct {
	r          rune
	start, end int
}

func (t *Tokenizer) tokenizeSegment(out []Token, seg string, base int, s *scratch) []Token {
	runes := t.normalize(seg, base, s.runes[:0])
	s.runes = runes
	wordStart := -1
	flush := func(end int) {
		if wordStart >= 0 {
			out = t.wordPiece(out, runes[wordStart:end], s)
			wordStart = -1
		}
	}
	for i, nr := range runes {
		switch {
		case isWhitespace(nr.r):
			flush(i)
		case isPunctuation(nr.r) || (t.chineseChars && isChinese(nr.r)):
			flush(i)
			out = t.wordPiece(out, runes[i:i+1], s)
		default:
			if wordStart < 0 {
				wordStart = i
			}
		}
	}
	flush(len(runes))
	return out
}

// normalize applies BertNormalizer to seg rune by rune, keeping each
// output rune's source span (offset by base).
func (t *Tokenizer) normalize(seg string, base int, out []nrune) []nrune {
	var decomp [32]byte
	out = slices.Grow(out, len(seg))
	for i, r := range seg {
		size := utf8.RuneLen(r)
		if r == utf8.RuneError {
			_, size = utf8.DecodeRuneInString(seg[i:])
		}
		start, end := base+i, base+i+size
		if t.cleanText {
			if r == 0 || r == utf8.RuneError || isControl(r) {
				continue
			}
			if isWhitespace(r) {
				r = ' '
			}
		}
		if t.stripAccents && r >= 0x80 {
			var d []byte
			if r >= 0xAC00 && r <= 0xD7A3 { // Hangul syllables decompose algorithmically
				d = norm.NFD.AppendString(decomp[:0], string(r))
			} else if d = norm.NFD.PropertiesString(string(r)).Decomposition(); d == nil {
				out = t.appendLower(out, r, start, end)
				continue
			}
			for _, dr := range string(d) {
				if unicode.Is(unicode.Mn, dr) {
					continue
				}
				out = t.appendLower(out, dr, start, end)
			}
			continue
		}
		out = t.appendLower(out, r, start, end)
	}
	return out
}

func (t *Tokenizer) appendLower(out []nrune, r rune, start, end int) []nrune {
	if t.lowercase {
		if r == 'İ' { // the one unconditional multi-rune lowercase mapping
			return append(out, nrune{'i', start, end}, nrune{'\u0307', start, end})
		}
		r = unicode.ToLower(r)
	}
	return append(out, nrune{r, start, end})
}

// wordPiece appends the pieces of one word.
func (t *Tokenizer) wordPiece(out []Token, word []nrune, s *scratch) []Token {
	if len(word) == 0 {
		return out
	}
	start, end := word[0].start, word[len(word)-1].end
	if len(word) > t.maxWordChars {
		return append(out, Token{ID: t.unk, Start: start, End: end})
	}
	w, ends := s.word[:0], s.ends[:0]
	for _, nr := range word {
		w = utf8.AppendRune(w, nr.r)
		ends = append(ends, len(w))
	}
	s.word, s.ends = w, ends
	first := len(out)
	pos, ri := 0, 0 // byte and rune index of the next piece
	for pos < len(w) {
		buf := s.buf[:0]
		if pos > 0 {
			buf = append(buf, t.prefix...)
		}
		plen := len(buf)
		buf = append(buf, w[pos:]...)
		s.buf = buf
		found := false
		// Try the longest candidate first: end runes from the word's end
		// back to ri+1, skipping candidates longer than any entry.
		for rj := len(ends) - 1; rj >= ri; rj-- {
			n := plen + ends[rj] - pos
			if n > t.maxTokenBytes {
				continue
			}
			if id, ok := t.vocab[string(buf[:n])]; ok {
				out = append(out, Token{ID: id, Start: word[ri].start, End: word[rj].end, Continuation: pos > 0})
				pos, ri = ends[rj], rj+1
				found = true
				break
			}
		}
		if !found {
			return append(out[:first], Token{ID: t.unk, Start: start, End: end})
		}
	}
	return out
}

func isWhitespace(r rune) bool {
	if r < 0x80 {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return unicode.Is(unicode.White_Space, r)
}

// isControl is Rust's char::is_other (categories Cc, Cf, Cn, Co, Cs),
// except that tab, newline and carriage return count as whitespace.
func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	if r < 0x7f {
		return r < 0x20
	}
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Zs, unicode.Zl, unicode.Zp)
}

func isPunctuation(r rune) bool {
	if r < 0x80 {
		return (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126)
	}
	return unicode.IsPunct(r)
}

// isChinese reports a CJK ideograph (the blocks BERT's tokenizer
// isolates; Hangul, kana and CJK punctuation are not among them).
func isChinese(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}
