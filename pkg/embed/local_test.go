package embed

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed/bert/berttest"
)

// tinyModel writes a random tiny BERT (vocabulary berttest.Vocab()) to a
// temporary directory.
func tinyModel(t testing.TB, mutate func(*berttest.Spec)) (string, *berttest.Model) {
	t.Helper()
	spec := berttest.Tiny()
	if mutate != nil {
		mutate(&spec)
	}
	dir := filepath.Join(t.TempDir(), "tiny-bert")
	ref, err := berttest.Write(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	return dir, ref
}

func newLocal(t testing.TB, cfg LocalConfig) *Local {
	t.Helper()
	l, err := NewLocal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// ids looks tokens up in the test vocabulary by position, independently
// of the tokenizer.
func ids(t *testing.T, tokens ...string) []int32 {
	t.Helper()
	vocab := berttest.Vocab()
	out := make([]int32, len(tokens))
	for i, tok := range tokens {
		j := slices.Index(vocab, tok)
		if j < 0 {
			t.Fatalf("%q is not in the test vocabulary", tok)
		}
		out[i] = int32(j)
	}
	return out
}

func maxDiff(a []float32, b []float64) float64 {
	var d float64
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-b[i]))
	}
	return d
}

// TestLocalMatchesReference runs text through the whole local embedder
// (tokenizer, loader, encoder, pooling) and compares it with the
// reference implementation given token ids worked out by hand.
func TestLocalMatchesReference(t *testing.T) {
	dir, ref := tinyModel(t, nil)
	clsDir, clsRef := tinyModel(t, func(s *berttest.Spec) { s.Pooling = "cls"; s.Seed = 11 })
	tests := []struct {
		name    string
		cfg     LocalConfig
		ref     *berttest.Model
		pooling string
		query   bool
		text    string
		tokens  []string
	}{
		{name: "words and punctuation", cfg: LocalConfig{ModelDir: dir}, ref: ref, pooling: "mean",
			text: "The heart attack.", tokens: []string{"[CLS]", "the", "heart", "attack", ".", "[SEP]"}},
		{name: "word pieces", cfg: LocalConfig{ModelDir: dir}, ref: ref, pooling: "mean",
			text: "Embedding cars, unaffable RUNNING!", tokens: []string{"[CLS]", "embed", "##ding", "car", "##s", ",", "un", "##aff", "##able", "run", "##ning", "!", "[SEP]"}},
		{name: "letters and accents", cfg: LocalConfig{ModelDir: dir}, ref: ref, pooling: "mean",
			text: "Xyz façade", tokens: []string{"[CLS]", "x", "##y", "##z", "f", "##a", "##c", "##a", "##d", "##e", "[SEP]"}},
		{name: "unknown character", cfg: LocalConfig{ModelDir: dir}, ref: ref, pooling: "mean",
			text: "car ☃", tokens: []string{"[CLS]", "car", "[UNK]", "[SEP]"}},
		{name: "empty text", cfg: LocalConfig{ModelDir: dir}, ref: ref, pooling: "mean",
			text: "", tokens: []string{"[CLS]", "[SEP]"}},
		{name: "passage prefix", cfg: LocalConfig{ModelDir: dir, QueryPrefix: "query: ", PassagePrefix: "passage: "}, ref: ref, pooling: "mean",
			text: "The car", tokens: []string{"[CLS]", "passage", ":", "the", "car", "[SEP]"}},
		{name: "query prefix", cfg: LocalConfig{ModelDir: dir, QueryPrefix: "query: ", PassagePrefix: "passage: "}, ref: ref, pooling: "mean", query: true,
			text: "The car", tokens: []string{"[CLS]", "query", ":", "the", "car", "[SEP]"}},
		{name: "no query prefix configured", cfg: LocalConfig{ModelDir: dir}, ref: ref, pooling: "mean", query: true,
			text: "The car", tokens: []string{"[CLS]", "the", "car", "[SEP]"}},
		{name: "CLS pooling from 1_Pooling/config.json", cfg: LocalConfig{ModelDir: clsDir}, ref: clsRef, pooling: "cls",
			text: "The heart attack.", tokens: []string{"[CLS]", "the", "heart", "attack", ".", "[SEP]"}},
		{name: "pooling configured over the directory's", cfg: LocalConfig{ModelDir: clsDir, Pooling: "mean"}, ref: clsRef, pooling: "mean",
			text: "The heart attack.", tokens: []string{"[CLS]", "the", "heart", "attack", ".", "[SEP]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newLocal(t, tc.cfg)
			var got [][]float32
			var err error
			if tc.query {
				got, err = l.EmbedQueries(context.Background(), []string{tc.text})
			} else {
				got, err = l.Embed(context.Background(), []string{tc.text})
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.ref.Embed([][]int32{ids(t, tc.tokens...)}, tc.pooling)
			if d := maxDiff(got[0], want[0]); d > 1e-4 {
				t.Errorf("differs from the reference by %g", d)
			}
		})
	}
}

// TestLocalTextsDiffer guards against a test that passes because every
// text gets the same vector.
func TestLocalTextsDiffer(t *testing.T) {
	dir, _ := tinyModel(t, nil)
	l := newLocal(t, LocalConfig{ModelDir: dir})
	vs, err := l.Embed(context.Background(), []string{"The heart attack.", "The car.", "The heart attack."})
	if err != nil {
		t.Fatal(err)
	}
	if d := squaredL2(vs[0], vs[1]); d < 1e-3 {
		t.Errorf("different texts at squared distance %g", d)
	}
	if d := squaredL2(vs[0], vs[2]); d != 0 {
		t.Errorf("equal texts at squared distance %g", d)
	}
	for i, v := range vs {
		if n := norm(v); math.Abs(n-1) > 1e-5 {
			t.Errorf("vector %d has norm %v", i, n)
		}
	}
}

// longText is n words of the test vocabulary (some of two pieces).
func longText(n int) string {
	words := strings.Fields("the heart attack of a car automobile , myocardial infarction vehicle drive protein cells gene tumor patients . " +
		"semantic vector search embedding running unaffable document passage query ; cars genes")
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[(i*7)%len(words)])
	}
	return b.String()
}

func TestLocalBatchInvariance(t *testing.T) {
	dir, _ := tinyModel(t, nil)
	ctx := context.Background()
	texts := []string{"The heart attack.", longText(40), "car", longText(15), "The heart attack."}
	var runs [][][]float32
	for _, batch := range []int{1, 64, 1 << 20} { // one sequence a pass .. all at once
		l := newLocal(t, LocalConfig{ModelDir: dir, BatchTokens: batch})
		vs, err := l.Embed(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, vs)
		for i, text := range texts {
			alone, err := l.Embed(ctx, []string{text})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(alone[0], vs[i]) {
				t.Errorf("batch tokens %d: text %d differs alone and in a batch", batch, i)
			}
		}
	}
	for r := 1; r < len(runs); r++ {
		for i := range texts {
			if !slices.Equal(runs[0][i], runs[r][i]) {
				t.Errorf("text %d differs between batch sizes", i)
			}
		}
	}
}

func TestLocalPassages(t *testing.T) {
	dir, _ := tinyModel(t, nil)
	ctx := context.Background()
	l := newLocal(t, LocalConfig{ModelDir: dir, MaxTokens: 24, PassagePrefix: "passage: "})
	info := l.Info()
	if info.Window != 24-2-2 || info.Overlap != info.Window/4 {
		t.Fatalf("window %d overlap %d", info.Window, info.Overlap)
	}
	long := longText(300)
	texts := []string{long, "The heart attack.", ""}
	ps, err := l.EmbedPassages(ctx, texts, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps[0]) < 300/info.Window || len(ps[1]) != 1 || len(ps[2]) != 1 {
		t.Fatalf("passages per text: %d, %d, %d", len(ps[0]), len(ps[1]), len(ps[2]))
	}
	end := 0
	for i, p := range ps[0] {
		if p.Start > end {
			t.Errorf("passage %d starts at %d, after the previous end %d: text skipped", i, p.Start, end)
		}
		if i > 0 && p.Start >= ps[0][i-1].End {
			t.Errorf("passage %d does not overlap the one before", i)
		}
		end = p.End
		// A passage's vector is that of its text embedded alone.
		alone, err := l.Embed(ctx, []string{long[p.Start:p.End]})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(alone[0], p.Vector) {
			t.Errorf("passage %d (%q) differs from its text embedded alone", i, long[p.Start:p.End])
		}
		if n := norm(p.Vector); math.Abs(n-1) > 1e-5 {
			t.Errorf("passage %d has norm %v", i, n)
		}
	}
	if end != len(long) {
		t.Errorf("passages end at %d of %d bytes", end, len(long))
	}
	// Embed keeps a long text's first passage.
	first, err := l.Embed(ctx, []string{long})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first[0], ps[0][0].Vector) {
		t.Error("Embed of a long text is not its first passage")
	}
	// The same with no ASCII whitespace for Embed's shortcut to cut at:
	// em spaces separate the words.
	joined := strings.ReplaceAll(long, " ", "\u2003")
	a, err := l.Embed(ctx, []string{joined})
	if err != nil {
		t.Fatal(err)
	}
	pj, err := l.EmbedPassages(ctx, []string{joined}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a[0], pj[0][0].Vector) || !slices.Equal(a[0], ps[0][0].Vector) {
		t.Error("em-space separated text: Embed differs from the first passage")
	}
}

func TestLocalContextCancelled(t *testing.T) {
	dir, _ := tinyModel(t, nil)
	l := newLocal(t, LocalConfig{ModelDir: dir})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Embed(ctx, []string{"car"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed: %v", err)
	}
	if _, err := l.EmbedPassages(ctx, []string{"car"}, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("EmbedPassages: %v", err)
	}
}

func TestLocalConfigErrors(t *testing.T) {
	dir, _ := tinyModel(t, nil)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// without copies a model directory lacking some files.
	without := func(names ...string) string {
		d := filepath.Join(t.TempDir(), "partial")
		if err := os.CopyFS(d, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if err := os.RemoveAll(filepath.Join(d, n)); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	withFile := func(name, content string) string {
		d := without()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(d, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		name string
		cfg  LocalConfig
		want string
	}{
		{"no directory configured", LocalConfig{}, "needs a model directory"},
		{"directory missing", LocalConfig{ModelDir: filepath.Join(dir, "nope")}, "does not exist"},
		{"a file, not a directory", LocalConfig{ModelDir: file}, "is not a directory"},
		{"no config.json", LocalConfig{ModelDir: without("config.json")}, "lacks config.json"},
		{"no weights", LocalConfig{ModelDir: without("model.safetensors")}, "lacks model.safetensors"},
		{"no tokenizer", LocalConfig{ModelDir: without("vocab.txt")}, "lacks tokenizer.json or vocab.txt"},
		{"nothing", LocalConfig{ModelDir: without("config.json", "model.safetensors", "vocab.txt")}, "lacks config.json, model.safetensors, tokenizer.json or vocab.txt"},
		{"bad pooling", LocalConfig{ModelDir: dir, Pooling: "max"}, `pooling "max"`},
		{"unsupported pooling in the directory", LocalConfig{ModelDir: withFile("1_Pooling/config.json", `{"pooling_mode_max_tokens": true}`)}, "pooling [max_tokens] is not supported"},
		{"more tokens than positions", LocalConfig{ModelDir: dir, MaxTokens: 65}, "more than the model's 64 positions"},
		{"window too small", LocalConfig{ModelDir: dir, MaxTokens: 10, PassagePrefix: "passage: "}, "leaves 6 tokens"},
		{"overlap too large", LocalConfig{ModelDir: dir, Overlap: 40}, "overlap 40"},
		{"tokenizer larger than the model", LocalConfig{ModelDir: withFile("vocab.txt", strings.Join(berttest.Vocab(), "\n")+"\nextra1\nextra2\n")}, "vocab_size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewLocal(tc.cfg)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrConfig saying %q", err, tc.want)
			}
		})
	}
}

func TestLocalSettingsFromDirectory(t *testing.T) {
	dir, _ := tinyModel(t, nil)
	files := map[string]string{
		"sentence_bert_config.json":         `{"max_seq_length": 32, "do_lower_case": false}`,
		"config_sentence_transformers.json": `{"prompts": {"query": "query: ", "document": "passage: "}, "default_prompt_name": null}`,
		"modules.json":                      `[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},{"idx":1,"name":"1","path":"pool","type":"sentence_transformers.models.Pooling"}]`,
		"pool/config.json":                  `{"word_embedding_dimension": 32, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}`,
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	info := newLocal(t, LocalConfig{ModelDir: dir}).Info()
	if info.MaxTokens != 32 || info.Pooling != "cls" || info.QueryPrefix != "query: " || info.PassagePrefix != "passage: " || info.Window != 28 {
		t.Errorf("info = %+v", info)
	}
	info = newLocal(t, LocalConfig{ModelDir: dir, MaxTokens: 64, Pooling: "mean", QueryPrefix: "q: ", PassagePrefix: "p: "}).Info()
	if info.MaxTokens != 64 || info.Pooling != "mean" || info.QueryPrefix != "q: " || info.PassagePrefix != "p: " {
		t.Errorf("configured settings did not win: %+v", info)
	}
}

func TestLocalIdentity(t *testing.T) {
	dir, _ := tinyModel(t, nil)
	otherDir, _ := tinyModel(t, func(s *berttest.Spec) { s.Seed = 42 })
	base := newLocal(t, LocalConfig{ModelDir: dir}).Identity()
	if base.Kind != KindLocal || base.Model != "tiny-bert" || base.Dimensions != 32 || len(base.Version) != 16 {
		t.Fatalf("identity %+v", base)
	}
	l := newLocal(t, LocalConfig{ModelDir: dir})
	if want := "local:tiny-bert@" + base.Version; l.Name() != want {
		t.Errorf("name %q, want %q", l.Name(), want)
	}
	tests := []struct {
		name string
		cfg  LocalConfig
		same bool
	}{
		{"loaded again", LocalConfig{ModelDir: dir}, true},
		{"another query prefix (stored vectors unchanged)", LocalConfig{ModelDir: dir, QueryPrefix: "query: "}, true},
		{"other weights", LocalConfig{ModelDir: otherDir}, false},
		{"other pooling", LocalConfig{ModelDir: dir, Pooling: "cls"}, false},
		{"passage prefix", LocalConfig{ModelDir: dir, PassagePrefix: "passage: "}, false},
		{"shorter window", LocalConfig{ModelDir: dir, MaxTokens: 32}, false},
	}
	for _, tc := range tests {
		got := newLocal(t, tc.cfg).Identity()
		if (got.Version == base.Version) != tc.same {
			t.Errorf("%s: version %s vs %s, same = %v", tc.name, got.Version, base.Version, !tc.same)
		}
	}
}

func TestNewLocalKind(t *testing.T) {
	dir, _ := tinyModel(t, nil)
	e, err := New(Config{Kind: "Local", ModelDir: dir, QueryPrefix: "query: "})
	if err != nil {
		t.Fatal(err)
	}
	if e.Dimensions() != 32 || IdentityOf(e).Kind != KindLocal {
		t.Errorf("dimensions %d, identity %+v", e.Dimensions(), IdentityOf(e))
	}
	q, err := EmbedQueries(context.Background(), e, []string{"car"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Embed(context.Background(), []string{"car"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(q[0], d[0]) {
		t.Error("the query prefix made no difference")
	}
	if _, err := New(Config{Kind: KindLocal, ModelDir: dir, Dimensions: 384}); !errors.Is(err, ErrConfig) {
		t.Errorf("wrong dimensions accepted: %v", err)
	}
	if _, err := New(Config{Kind: KindLocal, ModelDir: dir, Dimensions: 32}); err != nil {
		t.Errorf("matching dimensions refused: %v", err)
	}
	if _, err := New(Config{Kind: KindLocal}); !errors.Is(err, ErrConfig) {
		t.Errorf("no model directory: %v", err)
	}
}

func TestIdentities(t *testing.T) {
	h, err := NewHash(256)
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewOpenAI(OpenAIConfig{BaseURL: "http://localhost:1/v1", Model: "nomic-embed-text", Dimensions: 768})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		e    Embedder
		want Identity
		str  string
	}{
		{h, Identity{Kind: "hash", Model: "hash", Version: "v1", Dimensions: 256}, "hash:hash@v1/256"},
		{o, Identity{Kind: "openai", Model: "nomic-embed-text", Dimensions: 768}, "openai:nomic-embed-text/768"},
	}
	for _, tc := range tests {
		if got := IdentityOf(tc.e); got != tc.want || got.String() != tc.str {
			t.Errorf("%s: identity %+v (%s), want %+v (%s)", tc.e.Name(), got, got, tc.want, tc.str)
		}
	}
	// EmbedQueries falls back to Embed.
	q, err := EmbedQueries(context.Background(), h, []string{"heart attack"})
	if err != nil || !slices.Equal(q[0], h.Vector("heart attack")) {
		t.Errorf("EmbedQueries on hash: %v", err)
	}
}
