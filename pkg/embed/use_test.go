package embed

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// fakePieces is a tokenizer for the blend's tests: each whitespace word
// is one piece per started 4 bytes, ids hashed from the piece's text.
type fakePieces struct {
	mu      sync.Mutex
	longest int // longest text encoded
}

func (f *fakePieces) Encode(text string) []int32 {
	f.mu.Lock()
	f.longest = max(f.longest, len(text))
	f.mu.Unlock()
	var ids []int32
	for _, w := range strings.Fields(text) {
		for i := 0; i < len(w); i += 4 {
			ids = append(ids, int32(xxhash.Sum64String(w[i:min(i+4, len(w))])%8000)+1)
		}
	}
	return ids
}

// fakeEncoder embeds a sequence as a bias plus the sum of a fixed random
// vector per piece id: a bag of pieces, deterministic, not normalised.
type fakeEncoder struct {
	dims    int
	fail    error
	mu      sync.Mutex
	batches []int // sequences per call
	longest int   // pieces of the longest sequence
}

func (f *fakeEncoder) Embed(ctx context.Context, ids [][]int32) ([][]float32, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	f.mu.Lock()
	f.batches = append(f.batches, len(ids))
	for _, s := range ids {
		f.longest = max(f.longest, len(s))
	}
	f.mu.Unlock()
	out := make([][]float32, len(ids))
	for i, s := range ids {
		v := make([]float32, f.dims)
		for d := range v { // a bias, as the real encoder's last layer has
			v[d] = 0.01 * float32(d%3)
		}
		for _, id := range s {
			r := rand.New(rand.NewPCG(uint64(id), 7))
			for d := range v {
				v[d] += float32(r.NormFloat64())
			}
		}
		out[i] = v
	}
	return out, nil
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func newTestUSE(t *testing.T, cfg USEConfig) (*USE, *fakePieces, *fakeEncoder) {
	t.Helper()
	tok, enc := &fakePieces{}, &fakeEncoder{dims: USEDimensions}
	u, err := newUSE(tok, enc, cfg, "fake", "digest")
	if err != nil {
		t.Fatal(err)
	}
	return u, tok, enc
}

// TestUSEBlend checks the blend's arithmetic: every vector has unit
// length, and the dot product of two (so their cosine, and 2 − squared
// L2 distance) is w·cos(encoder) + (1−w)·cos(hash) of their texts.
func TestUSEBlend(t *testing.T) {
	texts := []string{
		"The automobile would not start because its battery was completely drained.",
		"car engine refuses to turn over with a flat accumulator",
		"Vaccination of children against measles reduces hospital admissions.",
		"measles vaccine children",
		"An unrelated sentence about baking sourdough bread at home.",
	}
	for _, tc := range []struct {
		name string
		w    float64
	}{
		{name: "lexical only", w: 0},
		{name: "default", w: DefaultUSEWeight},
		{name: "even", w: 0.5},
		{name: "semantic only", w: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, tok, enc := newTestUSE(t, USEConfig{Weight: tc.w, WeightSet: true})
			vecs, err := u.Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			qs, err := EmbedQueries(context.Background(), u, texts)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := enc.Embed(context.Background(), [][]int32{tok.Encode(texts[0]), tok.Encode(texts[1]), tok.Encode(texts[2]), tok.Encode(texts[3]), tok.Encode(texts[4])})
			for i := range texts {
				if len(vecs[i]) != u.Dimensions() || u.Dimensions() != USEDimensions+DefaultHashDimensions {
					t.Fatalf("vector of %d values, Dimensions %d", len(vecs[i]), u.Dimensions())
				}
				if n := dot(vecs[i], vecs[i]); math.Abs(n-1) > 1e-5 {
					t.Errorf("text %d: squared norm %.6f, want 1", i, n)
				}
				if c := dot(vecs[i], qs[i]); math.Abs(c-1) > 1e-6 {
					t.Errorf("text %d: the query vector differs from the document's (dot %.6f)", i, c)
				}
				for j := range texts {
					want := tc.w*cosine(raw[i], raw[j]) + (1-tc.w)*cosine(u.lex.Vector(texts[i]), u.lex.Vector(texts[j]))
					if got := dot(vecs[i], vecs[j]); math.Abs(got-want) > 1e-5 {
						t.Errorf("texts %d, %d: cosine %.6f, want w·cos(sem)+(1−w)·cos(lex) = %.6f", i, j, got, want)
					}
				}
			}
		})
	}
}

// TestUSEQueryWithoutWords checks that a query of stop words or
// punctuation only embeds to the zero vector (nothing to be near), while
// a document of them keeps its sentence-encoder half.
func TestUSEQueryWithoutWords(t *testing.T) {
	u, _, _ := newTestUSE(t, USEConfig{})
	for _, tc := range []struct {
		name, text string
		wantZero   bool
	}{
		{name: "stop words", text: "the of and", wantZero: true},
		{name: "punctuation", text: "?! ...", wantZero: true},
		{name: "a content word", text: "the cake", wantZero: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			qs, err := u.EmbedQueries(context.Background(), []string{tc.text})
			if err != nil {
				t.Fatal(err)
			}
			if zero := dot(qs[0], qs[0]) == 0; zero != tc.wantZero {
				t.Errorf("query %q: zero vector %v, want %v", tc.text, zero, tc.wantZero)
			}
			ds, err := u.Embed(context.Background(), []string{tc.text})
			if err != nil {
				t.Fatal(err)
			}
			if dot(ds[0], ds[0]) == 0 {
				t.Errorf("document %q: zero vector", tc.text)
			}
		})
	}
}

// TestUSEShortQueryWeight checks the query side's weight for short
// queries: a query of at most ShortQueryWords content words scores
// documents (stored at w) in the order of v·cos(sem) + (1−v)·cos(lex),
// at unit length; longer queries keep w; documents do not change.
func TestUSEShortQueryWeight(t *testing.T) {
	const w, v = 0.3, 0.8
	u, tok, enc := newTestUSE(t, USEConfig{Weight: w, WeightSet: true, ShortQueryWords: 3, ShortQueryWeight: v})
	plain, _, _ := newTestUSE(t, USEConfig{Weight: w, WeightSet: true})
	if u.Identity() != plain.Identity() {
		t.Errorf("the query weight changed the identity: %s", u.Identity())
	}
	docs := []string{"The automobile would not start because its battery was drained.", "A flat accumulator in the car.", "Baking bread."}
	dv, err := u.Embed(context.Background(), docs)
	if err != nil {
		t.Fatal(err)
	}
	scale := 1 / math.Hypot(v/math.Sqrt(w), (1-v)/math.Sqrt(1-w))
	for _, tc := range []struct {
		name  string
		query string
		want  float64 // the effective weight
	}{
		{name: "short", query: "the car battery", want: v},
		{name: "three words", query: "car battery drained", want: v},
		{name: "long", query: "why would a car battery be drained overnight", want: w},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := u.EmbedQueries(context.Background(), []string{tc.query})
			if err != nil {
				t.Fatal(err)
			}
			if n := dot(q[0], q[0]); math.Abs(n-1) > 1e-5 {
				t.Errorf("squared norm %.6f", n)
			}
			raw, _ := enc.Embed(context.Background(), [][]int32{tok.Encode(tc.query)})
			for i, d := range docs {
				draw, _ := enc.Embed(context.Background(), [][]int32{tok.Encode(d)})
				blend := tc.want*cosine(raw[0], draw[0]) + (1-tc.want)*cosine(u.lex.Vector(tc.query), u.lex.Vector(d))
				if tc.want == v {
					blend *= scale
				}
				if got := dot(q[0], dv[i]); math.Abs(got-blend) > 1e-5 {
					t.Errorf("document %d: %.6f, want %.6f", i, got, blend)
				}
			}
		})
	}
	for _, cfg := range []USEConfig{
		{ShortQueryWords: 2, ShortQueryWeight: 1.5},
		{ShortQueryWords: -1},
		{Weight: 1, WeightSet: true, ShortQueryWords: 2, ShortQueryWeight: 0.5},
	} {
		if _, err := newUSE(&fakePieces{}, &fakeEncoder{dims: USEDimensions}, cfg, "fake", ""); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: got %v, want a configuration error", cfg, err)
		}
	}
}

// TestUSEMetadata checks metadata vectors: the lexical half alone, unit
// length, made without the sentence encoder, so that a blended query
// ranks them by lexical cosine.
func TestUSEMetadata(t *testing.T) {
	u, _, enc := newTestUSE(t, USEConfig{Weight: 0.4, WeightSet: true})
	texts := []string{"description: chocolate cake recipe\ndoc_type: Recipe\n", "description: wind turbines\n"}
	ms, err := Metadata(context.Background(), u, texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(enc.batches) != 0 {
		t.Errorf("the sentence encoder ran %d times for metadata", len(enc.batches))
	}
	q, err := EmbedQueries(context.Background(), u, []string{"chocolate cake"})
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if n := dot(m, m); math.Abs(n-1) > 1e-5 {
			t.Errorf("metadata %d: squared norm %.6f", i, n)
		}
		for _, x := range m[:USEDimensions] {
			if x != 0 {
				t.Fatalf("metadata %d has a semantic half", i)
			}
		}
		want := math.Sqrt(1-0.4) * cosine(u.lex.Vector("chocolate cake"), u.lex.Vector(texts[i]))
		if got := dot(q[0], m); math.Abs(got-want) > 1e-5 {
			t.Errorf("metadata %d: query cosine %.6f, want √(1−w)·cos(lexical) = %.6f", i, got, want)
		}
	}
	h, _ := NewHash(64)
	if _, ok := Embedder(h).(MetadataEmbedder); ok {
		t.Error("hash embeds metadata apart")
	}
}

// TestUSEIdentity checks that everything that decides a stored vector
// is in the identity, so that changing it makes the index re-embed.
func TestUSEIdentity(t *testing.T) {
	base, _, _ := newTestUSE(t, USEConfig{})
	if base.Weight() != DefaultUSEWeight || base.Window() != DefaultUSEPassagePieces {
		t.Fatalf("defaults: w %v, window %d", base.Weight(), base.Window())
	}
	id := base.Identity()
	if id.Kind != KindUSE || id.Dimensions != USEDimensions+DefaultHashDimensions || !strings.Contains(id.Version, "digest") {
		t.Errorf("identity %s", id)
	}
	for _, tc := range []struct {
		name string
		cfg  USEConfig
	}{
		{name: "weight", cfg: USEConfig{Weight: 0.5, WeightSet: true}},
		{name: "weight zero", cfg: USEConfig{Weight: 0, WeightSet: true}},
		{name: "lexical dimensions", cfg: USEConfig{LexicalDimensions: 512}},
		{name: "window", cfg: USEConfig{PassagePieces: 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other, _, _ := newTestUSE(t, tc.cfg)
			if other.Identity().Compatible(id) {
				t.Errorf("%s is compatible with %s", other.Identity(), id)
			}
		})
	}
	same, _, _ := newTestUSE(t, USEConfig{Weight: DefaultUSEWeight, WeightSet: true, LexicalDimensions: DefaultHashDimensions, PassagePieces: DefaultUSEPassagePieces})
	if !same.Identity().Compatible(id) {
		t.Errorf("the defaults spelled out: %s, not compatible with %s", same.Identity(), id)
	}
	u2, err := newUSE(&fakePieces{}, &fakeEncoder{dims: USEDimensions}, USEConfig{}, "fake", "other-weights")
	if err != nil {
		t.Fatal(err)
	}
	if u2.Identity().Compatible(id) {
		t.Errorf("other weights: %s is compatible with %s", u2.Identity(), id)
	}
}

// TestUSEPassages checks the windows: they cover the text from its
// first word to its last, in order, each of at most the window's
// pieces, consecutive ones overlapping; at most maxPassages, without
// tokenizing the text past them.
func TestUSEPassages(t *testing.T) {
	var words []string
	for i := range 1000 {
		words = append(words, []string{"alpha", "be", "gammadelta", "x", "epsilonzetaeta"}[i%5])
	}
	long := strings.Join(words, " ")
	for _, tc := range []struct {
		name        string
		text        string
		window      int
		maxPassages int
		wantN       int // passages; -1: not checked
	}{
		{name: "empty", text: "", window: 64, wantN: 1},
		{name: "blank", text: "  \n\t ", window: 64, wantN: 1},
		{name: "short", text: "a short text of words", window: 64, wantN: 1},
		{name: "long 64", text: long, window: 64, wantN: -1},
		{name: "long 128", text: long, window: 128, wantN: -1},
		{name: "long 256", text: long, window: 256, wantN: -1},
		{name: "bounded", text: long, window: 64, maxPassages: 3, wantN: 3},
		{name: "one huge word", text: "pre " + strings.Repeat("y", 2000) + " post", window: 64, wantN: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, tok, enc := newTestUSE(t, USEConfig{PassagePieces: tc.window})
			ps, err := u.EmbedPassages(context.Background(), []string{tc.text, "second text"}, tc.maxPassages)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != 2 || len(ps[1]) != 1 {
				t.Fatalf("passages per text: %d texts, %d of the second", len(ps), len(ps[1]))
			}
			got := ps[0]
			if len(strings.Fields(tc.text)) == 0 {
				for _, v := range got[0].Vector {
					if v != 0 {
						t.Fatalf("a text without words has a vector that is not zero: %v…", got[0].Vector[:4])
					}
				}
			}
			if tc.wantN >= 0 && len(got) != tc.wantN {
				t.Errorf("%d passages, want %d", len(got), tc.wantN)
			}
			if enc.longest > tc.window {
				t.Errorf("a sequence of %d pieces reached the encoder, window %d", enc.longest, tc.window)
			}
			fields := strings.Fields(tc.text)
			if len(fields) > 0 && tc.maxPassages == 0 {
				if first := strings.Index(tc.text, fields[0]); got[0].Start != first {
					t.Errorf("first passage starts at %d, the first word at %d", got[0].Start, first)
				}
				if last := strings.LastIndex(tc.text, fields[len(fields)-1]) + len(fields[len(fields)-1]); got[len(got)-1].End != last {
					t.Errorf("last passage ends at %d, the last word at %d", got[len(got)-1].End, last)
				}
			}
			for j, p := range got {
				if len(p.Vector) != u.Dimensions() {
					t.Fatalf("passage %d: %d values", j, len(p.Vector))
				}
				if n := len(tok.Encode(tc.text[p.Start:p.End])); n > tc.window && len(strings.Fields(tc.text[p.Start:p.End])) > 1 {
					t.Errorf("passage %d of several words has %d pieces, window %d", j, n, tc.window)
				}
				if j > 0 {
					prev := got[j-1]
					if p.Start <= prev.Start || p.End <= prev.End {
						t.Errorf("passage %d [%d,%d) does not follow [%d,%d)", j, p.Start, p.End, prev.Start, prev.End)
					}
					if p.Start >= prev.End && tc.name != "one huge word" {
						t.Errorf("passage %d [%d,%d) does not overlap [%d,%d)", j, p.Start, p.End, prev.Start, prev.End)
					}
				}
			}
			if tc.maxPassages > 0 {
				cover := tc.maxPassages*(tc.window-tc.window/4) + tc.window/4
				// Each word of the text has at most 4 pieces of at least 1 byte.
				if tok.longest > 16*cover {
					t.Errorf("tokenized %d bytes of the text for %d passages of %d pieces", tok.longest, tc.maxPassages, tc.window)
				}
			}
			for _, b := range enc.batches {
				if b > useBatch {
					t.Errorf("a batch of %d sequences, want at most %d", b, useBatch)
				}
			}
		})
	}
}

// TestUSEEncoderErrors checks that the encoder's failures reach the
// caller, and that a wrong vector length is refused.
func TestUSEEncoderErrors(t *testing.T) {
	boom := errors.New("boom")
	u, err := newUSE(&fakePieces{}, &fakeEncoder{dims: USEDimensions, fail: boom}, USEConfig{}, "fake", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Embed(context.Background(), []string{"text"}); !errors.Is(err, boom) {
		t.Errorf("encoder failure: got %v", err)
	}
	u, err = newUSE(&fakePieces{}, &fakeEncoder{dims: 384}, USEConfig{}, "fake", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.EmbedPassages(context.Background(), []string{"text"}, 0); err == nil {
		t.Error("vectors of 384 values were taken")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := u.Embed(ctx, []string{"text"}); !errors.Is(err, context.Canceled) {
		t.Errorf("done context: got %v", err)
	}
}

// TestUSEFallback checks New for the use kind without a model: the hash
// embedder, saying why; bad settings fail whether a model is there or
// not.
func TestUSEFallback(t *testing.T) {
	empty := t.TempDir()
	file := filepath.Join(empty, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		cfg        Config
		wantReason string // "" : an error is wanted
		wantErr    error
	}{
		{name: "no directory configured", cfg: Config{Kind: KindUSE, USEWeight: 0.3}, wantReason: "no model directory"},
		{name: "missing directory", cfg: Config{Kind: KindUSE, USEModelDir: filepath.Join(empty, "nope"), USEWeight: 0.3}, wantReason: "does not exist"},
		{name: "not a directory", cfg: Config{Kind: KindUSE, USEModelDir: file, USEWeight: 0.3}, wantReason: "not a directory"},
		{name: "empty directory", cfg: Config{Kind: KindUSE, USEModelDir: empty, USEWeight: 0.3, Dimensions: 256}, wantReason: "lacks model.json, vocab.json"},
		{name: "bad weight", cfg: Config{Kind: KindUSE, USEModelDir: empty, USEWeight: 1.5}, wantErr: ErrConfig},
		{name: "bad window", cfg: Config{Kind: KindUSE, USEWeight: 0.3, USEPassagePieces: 2}, wantErr: ErrConfig},
		{name: "bad lexical dimensions", cfg: Config{Kind: KindUSE, USEWeight: 0.3, Dimensions: 3}, wantErr: ErrConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(tc.cfg)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || errors.Is(err, ErrNoModel) {
					t.Fatalf("got %v, %v; want a %v error", e, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			reason, ok := FallbackReason(e)
			if !ok || !errors.Is(reason, ErrNoModel) || !strings.Contains(reason.Error(), tc.wantReason) {
				t.Fatalf("got %T, reason %v; want the hash fallback saying %q", e, reason, tc.wantReason)
			}
			dims := tc.cfg.Dimensions
			if dims == 0 {
				dims = DefaultHashDimensions
			}
			if id := IdentityOf(e); id != (Identity{Kind: KindHash, Model: "hash", Version: "v1", Dimensions: dims}) {
				t.Errorf("fallback identity %s", id)
			}
			if _, ok := e.(PassageEmbedder); !ok {
				t.Error("the fallback does not embed passages")
			}
		})
	}
	if _, ok := FallbackReason(must(NewHash(64))); ok {
		t.Error("a hash embedder is reported as a fallback")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestUSEQueryStats checks the query side's use of the searched
// documents' word statistics: with QueryIDF the lexical half is the hash
// vector with each word weighted by its IDF (to that power), with
// UnmatchedWeight a query whose words the documents lack is scored at
// that weight, and without statistics (or when they fail) the query is
// what EmbedQueries makes; documents never change.
func TestUSEQueryStats(t *testing.T) {
	const w, qw = 0.4, 0.25
	docs := []string{"The automobile would not start because its battery was drained.", "Measles vaccination of children in rural clinics.", "Baking bread."}
	// "battery" in 1 of 100 documents, "children" in 50, "zyxt" in none.
	freq := map[string]int64{"battery": 1, "children": 50, "vaccination": 3}
	stats := func(ctx context.Context, words []string) ([]int64, int64, error) {
		out := make([]int64, len(words))
		for i, w := range words {
			out[i] = freq[w]
		}
		return out, 100, nil
	}
	failing := func(ctx context.Context, words []string) ([]int64, int64, error) {
		return nil, 0, errors.New("engine down")
	}
	idf := func(word string) float64 {
		n := float64(freq[word])
		return math.Log(1 + (100-n+0.5)/(n+0.5))
	}
	for _, tc := range []struct {
		name       string
		cfg        USEConfig
		stats      WordStats
		query      string
		wantWeight float64
		idfPower   float64 // the lexical half's weighting (0: none)
	}{
		{name: "query weight only", cfg: USEConfig{QueryWeight: qw}, stats: stats, query: "children battery vaccination clinics", wantWeight: qw},
		{name: "idf", cfg: USEConfig{QueryWeight: qw, QueryIDF: 1}, stats: stats, query: "children battery vaccination clinics", wantWeight: qw, idfPower: 1},
		{name: "idf squared", cfg: USEConfig{QueryWeight: qw, QueryIDF: 2}, stats: stats, query: "children battery vaccination clinics", wantWeight: qw, idfPower: 2},
		{name: "no statistics", cfg: USEConfig{QueryWeight: qw, QueryIDF: 1}, query: "children battery vaccination clinics", wantWeight: qw},
		{name: "failing statistics", cfg: USEConfig{QueryWeight: qw, QueryIDF: 1}, stats: failing, query: "children battery vaccination clinics", wantWeight: qw},
		{name: "unmatched", cfg: USEConfig{QueryWeight: qw, UnmatchedWeight: 0.9}, stats: stats, query: "zyxt qwvb frob plonk", wantWeight: 0.9},
		{name: "all matched", cfg: USEConfig{QueryWeight: qw, UnmatchedWeight: 0.9}, stats: stats, query: "children battery vaccination", wantWeight: qw},
		{name: "half matched by idf", cfg: USEConfig{QueryWeight: qw, UnmatchedWeight: 0.9}, stats: stats, query: "children battery zyxt qwvb",
			wantWeight: qw + (0.9-qw)*(2*idf("zyxt"))/(idf("children")+idf("battery")+2*idf("zyxt"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Weight, tc.cfg.WeightSet = w, true
			u, tok, enc := newTestUSE(t, tc.cfg)
			plain, _, _ := newTestUSE(t, USEConfig{Weight: w, WeightSet: true})
			if u.Identity() != plain.Identity() {
				t.Errorf("query settings changed the identity: %s", u.Identity())
			}
			dv, err := u.Embed(context.Background(), docs)
			if err != nil {
				t.Fatal(err)
			}
			q, err := u.EmbedQueriesWithStats(context.Background(), []string{tc.query}, tc.stats)
			if err != nil {
				t.Fatal(err)
			}
			if n := dot(q[0], q[0]); math.Abs(n-1) > 1e-5 {
				t.Errorf("squared norm %.6f", n)
			}
			lex := u.lex.Vector(tc.query)
			if tc.idfPower > 0 {
				lex = u.lex.WeightedVector(tc.query, func(w string) float64 { return math.Pow(idf(w), tc.idfPower) })
			}
			v := tc.wantWeight
			scale := 1 / math.Hypot(v/math.Sqrt(w), (1-v)/math.Sqrt(1-w))
			raw, _ := enc.Embed(context.Background(), [][]int32{tok.Encode(tc.query)})
			for i, d := range docs {
				draw, _ := enc.Embed(context.Background(), [][]int32{tok.Encode(d)})
				want := scale * (v*cosine(raw[0], draw[0]) + (1-v)*dot(lex, u.lex.Vector(d)))
				if got := dot(q[0], dv[i]); math.Abs(got-want) > 1e-5 {
					t.Errorf("document %d: %.6f, want %.6f", i, got, want)
				}
			}
		})
	}
}

// TestUSEPassagesWithoutContent checks that every passage the use
// embedder stores has unit length, also where a window holds no content
// word (a table of contents' dots, stop words): its lexical half is zero,
// and at √w long it was nearer than any unit vector to every query (three
// such abstracts of SciFact were the nearest documents of most paraphrase
// queries through the stack). A text with other passages leaves such a
// window out; a text without any content word keeps its windows at full
// length.
func TestUSEPassagesWithoutContent(t *testing.T) {
	dots := strings.Repeat(". ", 400)
	for _, tc := range []struct {
		name      string
		text      string
		wantAll   bool // every window kept (no content word anywhere)
		wantFewer bool // some window left out
	}{
		{name: "title then dots", text: "Developing the methylphenylalanine model INTRODUCTION " + dots, wantFewer: true},
		{name: "dots between words", text: "first section words " + dots + " last section words", wantFewer: true},
		{name: "dots only", text: dots, wantAll: true},
		{name: "stop words only", text: "to be or not to be, that is what it was " + dots, wantAll: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, _, _ := newTestUSE(t, USEConfig{PassagePieces: 64})
			ps, err := u.EmbedPassages(context.Background(), []string{tc.text}, 0)
			if err != nil {
				t.Fatal(err)
			}
			windows := len(u.windows(tc.text, 0))
			if windows < 2 {
				t.Fatalf("the text makes %d window, want several for the test", windows)
			}
			got := ps[0]
			switch {
			case tc.wantAll && len(got) != windows:
				t.Errorf("%d passages of %d windows, want all", len(got), windows)
			case tc.wantFewer && (len(got) == 0 || len(got) >= windows):
				t.Errorf("%d passages of %d windows, want those with a content word", len(got), windows)
			}
			for j, p := range got {
				if n := dot(p.Vector, p.Vector); math.Abs(n-1) > 1e-4 {
					t.Errorf("passage %d %q: squared length %.4f, want 1", j, tc.text[p.Start:min(p.End, p.Start+40)], n)
				}
				if !tc.wantAll && contentWords(tc.text[p.Start:p.End], 1) == 0 {
					t.Errorf("passage %d %q has no content word", j, tc.text[p.Start:min(p.End, p.Start+40)])
				}
			}
		})
	}
}
