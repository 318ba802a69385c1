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
	// n words in the fewest windows of at most 128 words sharing 32.
	got := ps[1]
	n := len(tokenize(long, 1<<20))
	stride := HashPassageWords - HashPassageOverlap
	if want := (n - HashPassageOverlap + stride - 1) / stride; n < 900 || len(got) != want {
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

	// A limit of at least as many passages changes nothing; a lower one
	// keeps that many full windows from the start.
	for _, limit := range []int{1, 2, 5, len(got), len(got) + 1} {
		lim, err := h.EmbedPassages(ctx, []string{long}, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(lim[0]) != min(limit, len(got)) {
			t.Fatalf("limit %d: %d passages", limit, len(lim[0]))
		}
		for i, p := range lim[0] {
			switch {
			case limit >= len(got):
				if p.Start != got[i].Start || p.End != got[i].End || !near(p.Vector, got[i].Vector) {
					t.Errorf("limit %d: passage %d differs from the unlimited one", limit, i)
				}
			case len(tokenize(long[p.Start:p.End], 1<<20)) != HashPassageWords:
				t.Errorf("limit %d: passage %d is not a full window", limit, i)
			case i == 0 && p.Start != 0, i > 0 && (p.Start <= lim[0][i-1].Start || p.Start >= lim[0][i-1].End):
				t.Errorf("limit %d: passage %d [%d, %d) does not follow the one before", limit, i, p.Start, p.End)
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

func TestEvenWindows(t *testing.T) {
	for _, size := range []int{4, 16, 128} {
		overlap := size / 4
		for n := 0; n <= 20*size; n++ {
			ws := evenWindows(n, size, overlap)
			stride := size - overlap
			want := 1
			if n > size {
				want = (n - overlap + stride - 1) / stride
			}
			if len(ws) != want {
				t.Fatalf("n=%d size=%d: %d windows, want %d", n, size, len(ws), want)
			}
			if ws[0][0] != 0 || ws[len(ws)-1][1] != n {
				t.Fatalf("n=%d size=%d: windows %v do not span the words", n, size, ws)
			}
			for i, w := range ws {
				if l := w[1] - w[0]; l > size || l != ws[0][1]-ws[0][0] {
					t.Fatalf("n=%d size=%d: window %d has %d words (first %d)", n, size, i, l, ws[0][1]-ws[0][0])
				}
				if i > 0 && ws[i-1][1]-w[0] < overlap-1 {
					t.Fatalf("n=%d size=%d: windows %d and %d share %d words, want about %d", n, size, i-1, i, ws[i-1][1]-w[0], overlap)
				}
			}
		}
	}
}
