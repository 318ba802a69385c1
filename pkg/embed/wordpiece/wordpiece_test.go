package wordpiece

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// miniLMTokenizer is the tokenizer.json of sentence-transformers'
// all-MiniLM-L6-v2 (bert-base-uncased's vocabulary), as the Go module
// github.com/clems4ever/all-minilm-l6-v2-go carries it.
const miniLMTokenizer = "github.com/clems4ever/all-minilm-l6-v2-go@v0.0.9/all_minilm_l6_v2/tokenizer.json"

func loadMiniLM(t testing.TB) *Tokenizer {
	t.Helper()
	var path string
	for _, root := range []string{os.Getenv("GOMODCACHE"), filepath.Join(os.Getenv("HOME"), "go", "pkg", "mod"), "/root/go/pkg/mod"} {
		if root == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, miniLMTokenizer)); err == nil {
			path = filepath.Join(root, miniLMTokenizer)
			break
		}
	}
	if path == "" {
		t.Skipf("all-MiniLM-L6-v2 tokenizer.json not in the module cache; fetch it with: go mod download github.com/clems4ever/all-minilm-l6-v2-go@v0.0.9 (in a scratch module)")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ParseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestMiniLMTokenIDs checks ids against all-MiniLM-L6-v2's vocabulary.
// Each expectation was derived by hand: normalise (lowercase, strip
// accents), split on whitespace and punctuation, cut each word greedily
// into the longest vocabulary entries, and look the pieces up in the
// tokenizer.json vocabulary; the pieces are in the comments.
func TestMiniLMTokenIDs(t *testing.T) {
	tok := loadMiniLM(t)
	if tok.CLS() != 101 || tok.SEP() != 102 || tok.PAD() != 0 || tok.UNK() != 100 || tok.VocabSize() != 30522 {
		t.Fatalf("specials CLS %d SEP %d PAD %d UNK %d, vocab %d", tok.CLS(), tok.SEP(), tok.PAD(), tok.UNK(), tok.VocabSize())
	}
	tests := []struct {
		name string
		text string
		want []int32
	}{
		{"sentence", "Hello, world! This is a test sentence.",
			// hello , world ! this is a test sentence .
			[]int32{7592, 1010, 2088, 999, 2023, 2003, 1037, 3231, 6251, 1012}},
		{"accents and case", "Héllo  WÖRLD – café naïve",
			// hello world – cafe naive (the en dash is punctuation)
			[]int32{7592, 2088, 1516, 7668, 15743}},
		{"long words split into pieces", "The unaffable xylophonist's embeddings",
			// the una ##ffa ##ble x ##yl ##op ##hon ##ist ' s em ##bed ##ding ##s
			[]int32{1996, 14477, 20961, 3468, 1060, 8516, 7361, 8747, 2923, 1005, 1055, 7861, 8270, 4667, 2015}},
		{"very long word", "Pneumonoultramicroscopicsilicovolcanoconiosis",
			// p ##ne ##um ##ono ##ult ##ram ##ic ##ros ##copic ##sil ##ico ##vo ##lc ##ano ##con ##ios ##is
			[]int32{1052, 2638, 2819, 17175, 11314, 6444, 2594, 7352, 26461, 27572, 11261, 6767, 15472, 6761, 8663, 10735, 2483}},
		{"unknown character makes the whole word unknown", "qᚠz ᚠ",
			[]int32{100, 100}},
		{"word over 100 characters", strings.Repeat("a", 101) + " b",
			[]int32{100, 1038}},
		{"CJK ideographs are words of their own", "中文abc",
			// 中 文 abc
			[]int32{1746, 1861, 5925}},
		{"format characters are dropped", "foo\u200bbar foo\u00adbar",
			// foo ##bar foo ##bar (zero-width space and soft hyphen are Cf)
			[]int32{29379, 8237, 29379, 8237}},
		{"ASCII symbols are punctuation", "$100+50%=<tag>~|^`",
			// $ 100 + 50 % = < tag > ~ | ^ `
			[]int32{1002, 2531, 1009, 2753, 1003, 1027, 1026, 6415, 1028, 1066, 1064, 1034, 1036}},
		{"Hangul decomposes into jamo", "한국",
			// NFD: ᄒ ##ᅡ ##ᆫ ##ᄀ ##ᅮ ##ᆨ
			[]int32{1469, 30006, 30021, 29991, 30014, 30020}},
		{"two accents on one letter", "Ǖber",
			// NFD gives U + U+0308 + U+0304, both marks stripped: uber
			[]int32{19169}},
		{"dotted capital I", "İstanbul",
			// NFD gives I + U+0307, the mark is stripped: istanbul
			[]int32{9960}},
		{"whitespace of every kind", "hello\tworld\nfoo\r\n\u00a0\u3000",
			[]int32{7592, 2088, 29379}},
		{"special tokens in the text are kept whole", "a [MASK] b[SEP]",
			// a [MASK] b [SEP]
			[]int32{1037, 103, 1038, 102}},
		{"many special tokens", "[SEP][SEP]a[MASK][SEP][CLS]",
			[]int32{102, 102, 1037, 103, 102, 101}},
		{"special token spelled in lower case is text", "a [mask]",
			// a [ mask ]
			[]int32{1037, 1031, 7308, 1033}},
		{"invalid UTF-8 is dropped", "caf\xe9",
			// caf
			[]int32{24689}},
		{"unicode ligature", "ﬁne straße",
			// ﬁ ##ne st ##raße
			[]int32{1984, 2638, 2358, 27807}},
		{"empty", "", []int32{}},
		{"only spaces and controls", " \x00\x07 ", []int32{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tok.IDs(tc.text)
			if !slices.Equal(got, tc.want) {
				pieces := make([]string, len(got))
				for i, id := range got {
					pieces[i] = tok.Token(id)
				}
				t.Errorf("IDs(%q) = %v %q, want %v", tc.text, got, pieces, tc.want)
			}
			enc := tok.Encode(tc.text, 0)
			want := append(append([]int32{101}, tc.want...), 102)
			if !slices.Equal(enc, want) {
				t.Errorf("Encode = %v, want %v", enc, want)
			}
		})
	}
}

func TestEncodeTruncatesKeepingCLSAndSEP(t *testing.T) {
	tok := loadMiniLM(t)
	tests := []struct {
		maxLen int
		want   []int32
	}{
		{0, []int32{101, 7592, 1010, 2088, 999, 102}},
		{6, []int32{101, 7592, 1010, 2088, 999, 102}},
		{4, []int32{101, 7592, 1010, 102}},
		{2, []int32{101, 102}},
		{1, []int32{101, 102}},
	}
	for _, tc := range tests {
		if got := tok.Encode("Hello, world!", tc.maxLen); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(maxLen %d) = %v, want %v", tc.maxLen, got, tc.want)
		}
	}
}

func TestTokenSpansPointIntoTheOriginalText(t *testing.T) {
	tok := loadMiniLM(t)
	tests := []struct {
		text string
		want []string // the original text of each token
		cont []bool
	}{
		{"Héllo, wörld!", []string{"Héllo", ",", "wörld", "!"}, []bool{false, false, false, false}},
		{"  embeddings", []string{"em", "bed", "ding", "s"}, []bool{false, true, true, true}},
		{"x[SEP]中", []string{"x", "[SEP]", "中"}, []bool{false, false, false}},
		{"qᚠz", []string{"qᚠz"}, []bool{false}},
		{"İstanbul", []string{"İstanbul"}, []bool{false}},
	}
	for _, tc := range tests {
		toks := tok.Tokenize(tc.text)
		var got []string
		var cont []bool
		for _, tk := range toks {
			got = append(got, tc.text[tk.Start:tk.End])
			cont = append(cont, tk.Continuation)
		}
		if !slices.Equal(got, tc.want) || !slices.Equal(cont, tc.cont) {
			t.Errorf("Tokenize(%q) spans %q continuation %v, want %q %v", tc.text, got, cont, tc.want, tc.cont)
		}
	}
}

// smallVocab is a vocab.txt for tests: ids are line numbers.
const smallVocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nun\n##aff\n##able\nrun\n##ning\ncafé\ncafe\nCafe\n,\n.\n!\n##s\na\n"

func TestVocabTxtOptions(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		opts Options
		text string
		want []string
	}{
		{"uncased", DefaultOptions(), "The unaffable Café, running!", []string{"the", "un", "##aff", "##able", "cafe", ",", "run", "##ning", "!"}},
		{"cased keeps accents", Options{CleanText: true, ChineseChars: true}, "Cafe café the", []string{"Cafe", "café", "the"}},
		{"lowercase without stripping", Options{Lowercase: true, StripAccents: &no, CleanText: true}, "CAFÉ", []string{"café"}},
		{"stripping without lowercase", Options{StripAccents: &yes, CleanText: true}, "Cafe café", []string{"Cafe", "cafe"}},
		{"no covering pieces", DefaultOptions(), "unx runs", []string{"[UNK]", "run", "##s"}},
		{"no clean text keeps controls in words", Options{Lowercase: true}, "a\x01", []string{"[UNK]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := FromVocab(strings.NewReader(smallVocab), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, id := range tok.IDs(tc.text) {
				got = append(got, tok.Token(id))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("tokens = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoadPrefersTokenizerJSONAndRejectsUnsupportedModels(t *testing.T) {
	tokJSON := `{"added_tokens":[{"id":0,"content":"[PAD]"},{"id":1,"content":"[UNK]"}],
		"normalizer":{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true},
		"pre_tokenizer":{"type":"BertPreTokenizer"},
		"post_processor":{"type":"BertProcessing","sep":["[SEP]",3],"cls":["[CLS]",2]},
		"model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##","max_input_chars_per_word":100,
		"vocab":{"[PAD]":0,"[UNK]":1,"[CLS]":2,"[SEP]":3,"run":4,"##ning":5}}}`
	tests := []struct {
		name    string
		files   map[string]string
		want    []int32
		wantErr error
		errText string
	}{
		{name: "tokenizer.json", files: map[string]string{TokenizerJSON: tokJSON}, want: []int32{2, 4, 5, 3}},
		{name: "tokenizer.json wins over vocab.txt", files: map[string]string{TokenizerJSON: tokJSON, VocabTxt: "x\n"}, want: []int32{2, 4, 5, 3}},
		{name: "vocab.txt", files: map[string]string{VocabTxt: smallVocab}, want: []int32{2, 9, 10, 3}},
		{name: "vocab.txt, cased by tokenizer_config.json", files: map[string]string{VocabTxt: smallVocab, TokenizerConfig: `{"do_lower_case": false}`}, want: []int32{2, 1, 3}},
		{name: "nothing", files: map[string]string{}, wantErr: ErrNoTokenizer},
		{name: "BPE model", files: map[string]string{TokenizerJSON: strings.Replace(tokJSON, `"type":"WordPiece"`, `"type":"BPE"`, 1)}, errText: `model type "BPE"`},
		{name: "other normalizer", files: map[string]string{TokenizerJSON: strings.Replace(tokJSON, `"BertNormalizer"`, `"NFKC"`, 1)}, errText: `normalizer type "NFKC"`},
		{name: "vocab.txt without [CLS]", files: map[string]string{VocabTxt: "[UNK]\n[SEP]\n[PAD]\n"}, errText: `"[CLS]"`},
		{name: "broken JSON", files: map[string]string{TokenizerJSON: "{"}, errText: TokenizerJSON},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			tok, err := Load(dir)
			switch {
			case tc.wantErr != nil || tc.errText != "":
				if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("err = %v, want %v %q", err, tc.wantErr, tc.errText)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			text := "Running"
			if got := tok.Encode(text, 0); !slices.Equal(got, tc.want) {
				t.Errorf("Encode(%q) = %v, want %v", text, got, tc.want)
			}
		})
	}
}

// TestManySpecialTokensIsLinear guards against searching the whole text
// again for every special token found in it.
func TestManySpecialTokensIsLinear(t *testing.T) {
	tok := loadMiniLM(t)
	text := strings.Repeat("[SEP] x ", 50_000) // 400 kB, 100,000 tokens
	start := time.Now()
	if n := len(tok.Tokenize(text)); n != 100_000 {
		t.Fatalf("%d tokens", n)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

func BenchmarkTokenizeMiniLM(b *testing.B) {
	tok := loadMiniLM(b)
	text := strings.Repeat("The unaffable xylophonist's embeddings of café naïveté, 1,234 times! ", 100)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Tokenize(text)
	}
}
