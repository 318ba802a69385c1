package embed

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// wordsText is n distinct words "w0 w1 ...", with extra inserted at word
// position at (when at ≥ 0), separated by spaces and some punctuation.
func wordsText(n, at int, extra string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			if i%13 == 0 {
				b.WriteString(", ")
			} else {
				b.WriteByte(' ')
			}
		}
		if i == at {
			b.WriteString(extra)
		} else {
			fmt.Fprintf(&b, "w%d", i)
		}
	}
	return b.String()
}

func TestHashPassages(t *testing.T) {
	ctx := context.Background()
	h, err := NewHash(DefaultHashDimensions)
	if err != nil {
		t.Fatal(err)
	}
	short := "Myocardial infarction in young adults."
	// A long text about cooking with one paragraph about thrombolysis
	// near its end.
	var b strings.Builder
	for b.Len() < 5500 {
		b.WriteString("Whisk the butter and sugar, fold in the flour, and bake the cake in a warm oven until golden. ")
	}
	b.WriteString("Thrombolysis after myocardial infarction restores coronary blood flow; early thrombolytic therapy reduces mortality. ")
	for range 6 {
		b.WriteString("Serve the cake with cream and fresh berries. ")
	}
	long := b.String()
	ps, err := h.EmbedPassages(ctx, []string{short, long, "", "?!"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A text of one window is one passage with the text's own vector.
	if len(ps[0]) != 1 || !slices.Equal(ps[0][0].Vector, h.Vector(short)) {
		t.Errorf("short text: %d passages, or a vector other than Vector's", len(ps[0]))
	}
	// Empty and wordless texts: one passage, the zero vector.
	for _, i := range []int{2, 3} {
		if len(ps[i]) != 1 || norm(ps[i][0].Vector) != 0 {
			t.Errorf("text %d: %d passages, want one zero vector", i, len(ps[i]))
		}
	}
	// n words in windows of 256 moving by 192.
	got := ps[1]
	n := len(tokenize(long, 1<<20))
	if want := (n - HashPassageOverlap + HashPassageWords - HashPassageOverlap - 1) / (HashPassageWords - HashPassageOverlap); n < 900 || len(got) != want {
		t.Fatalf("%d words: %d passages, want %d", n, len(got), want)
	}
	end, deep := 0, -1
	for i, p := range got {
		if p.Start > end {
			t.Errorf("passage %d starts at %d, after the previous end %d", i, p.Start, end)
		}
		if i > 0 && p.Start >= got[i-1].End {
			t.Errorf("passage %d does not overlap the one before", i)
		}
		if n := len(tokenize(long[p.Start:p.End], 1<<20)); n > HashPassageWords {
			t.Errorf("passage %d has %d words", i, n)
		}
		if !near(p.Vector, h.Vector(long[p.Start:p.End])) {
			t.Errorf("passage %d differs from its text embedded alone", i)
		}
		if strings.Contains(long[p.Start:p.End], "Thrombolysis") && deep < 0 {
			deep = i
		}
		end = p.End
	}
	if want := len(strings.TrimRight(long, ". ")); end != want {
		t.Errorf("passages end at %d, the last word at %d", end, want)
	}
	// The paragraph near the end is in a late passage, which is much
	// nearer to a query about it than the first passage or the
	// whole-text vector.
	if deep < 3 {
		t.Fatalf("the thrombolysis paragraph is in passage %d", deep)
	}
	q := h.Vector("thrombolytic therapy for myocardial infarction")
	if d, d0, whole := squaredL2(q, got[deep].Vector), squaredL2(q, got[0].Vector), squaredL2(q, h.Vector(long)); d >= d0-0.3 || d >= whole-0.1 {
		t.Errorf("query to its passage %.3f, to the first %.3f, to the whole text %.3f", d, d0, whole)
	}

	// A limit keeps the first windows, exactly as without it.
	for _, limit := range []int{1, 2, 5, 6} {
		lim, err := h.EmbedPassages(ctx, []string{long}, limit)
		if err != nil {
			t.Fatal(err)
		}
		want := got[:min(limit, len(got))]
		if len(lim[0]) != len(want) {
			t.Fatalf("limit %d: %d passages, want %d", limit, len(lim[0]), len(want))
		}
		for i := range want {
			if lim[0][i].Start != want[i].Start || lim[0][i].End != want[i].End || !near(lim[0][i].Vector, want[i].Vector) {
				t.Errorf("limit %d: passage %d differs from the unlimited one", limit, i)
			}
		}
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := h.EmbedPassages(cancelled, []string{short}, 0); err == nil {
		t.Error("EmbedPassages with a cancelled context succeeded")
	}
}

// near reports whether two vectors agree to float32 rounding (the hash
// embedder sums colliding features in map order, so the last bit can
// differ between two embeddings of the same text).
func near(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if d := a[i] - b[i]; d > 1e-6 || d < -1e-6 {
			return false
		}
	}
	return true
}

// plainEmbedder hides an embedder's EmbedPassages.
type plainEmbedder struct{ Embedder }

func TestPassagesFallback(t *testing.T) {
	ctx := context.Background()
	h, _ := NewHash(64)
	long := wordsText(1000, -1, "")
	// With EmbedPassages: the embedder's windows.
	ps, err := Passages(ctx, h, []string{long}, 3, 100)
	if err != nil || len(ps[0]) != 3 {
		t.Fatalf("Passages of a PassageEmbedder: %d passages, %v", len(ps[0]), err)
	}
	// Without: one passage of the first maxBytes bytes, cut at a rune
	// boundary.
	text := strings.Repeat("é", 100) // 200 bytes
	ps, err = Passages(ctx, plainEmbedder{h}, []string{long, text}, 3, 101)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps[0]) != 1 || ps[0][0].End != 101 || !near(ps[0][0].Vector, h.Vector(long[:101])) {
		t.Errorf("long text: %+v", ps[0][0].End)
	}
	if len(ps[1]) != 1 || ps[1][0].End != 100 || !near(ps[1][0].Vector, h.Vector(text[:100])) {
		t.Errorf("text cut inside a rune: ends at %d", ps[1][0].End)
	}
}

func TestLocalPassageLimit(t *testing.T) {
	dir, _ := tinyModel(t, nil)
	ctx := context.Background()
	l := newLocal(t, LocalConfig{ModelDir: dir, MaxTokens: 24})
	long := longText(400)
	all, err := l.EmbedPassages(ctx, []string{long}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all[0]) < 5 {
		t.Fatalf("%d passages", len(all[0]))
	}
	for _, limit := range []int{1, 3, len(all[0]), len(all[0]) + 2} {
		lim, err := l.EmbedPassages(ctx, []string{long, "car"}, limit)
		if err != nil {
			t.Fatal(err)
		}
		want := all[0][:min(limit, len(all[0]))]
		if len(lim[0]) != len(want) || len(lim[1]) != 1 {
			t.Fatalf("limit %d: %d and %d passages, want %d and 1", limit, len(lim[0]), len(lim[1]), len(want))
		}
		for i := range want {
			if lim[0][i].Start != want[i].Start || lim[0][i].End != want[i].End || !slices.Equal(lim[0][i].Vector, want[i].Vector) {
				t.Errorf("limit %d: passage %d differs from the unlimited one", limit, i)
			}
		}
	}
}

func TestIdentityCompatible(t *testing.T) {
	hash := Identity{Kind: "hash", Model: "hash", Version: "v1", Dimensions: 768}
	local := Identity{Kind: "local", Model: "all-MiniLM-L6-v2", Version: "0123", Dimensions: 384}
	openai := Identity{Kind: "openai", Model: "nomic-embed-text", Dimensions: 768}
	with := func(id Identity, f func(*Identity)) Identity { f(&id); return id }
	tests := []struct {
		a, b Identity
		want bool
	}{
		{hash, hash, true},
		{hash, with(hash, func(i *Identity) { i.Dimensions = 512 }), false},
		{hash, with(hash, func(i *Identity) { i.Version = "v2" }), false},
		{hash, openai, false},
		{local, with(local, func(i *Identity) { i.Model = "minilm-copy" }), true}, // same weights elsewhere
		{local, with(local, func(i *Identity) { i.Version = "4567" }), false},
		{openai, openai, true},
		{openai, with(openai, func(i *Identity) { i.Model = "text-embedding-3-small" }), false},
	}
	for _, tc := range tests {
		if got := tc.a.Compatible(tc.b); got != tc.want || tc.b.Compatible(tc.a) != tc.want {
			t.Errorf("%v compatible with %v: %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
