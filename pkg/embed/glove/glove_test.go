package glove

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeFile writes a file in the package's format: words in rank order,
// each with a vector (its L2 norm and rank appended), the map's order
// shuffled as the package's is not guaranteed to follow ranks.
func fakeFile(t *testing.T, words []string, vecs [][]float64, order []int) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"precision":8,"l2NormIndex":100,"wordIndex":101,"size":%d,"dimensions":100,"words":[`, len(words))
	for i, w := range words {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q", w)
	}
	b.WriteString(`],"vectors":{`)
	for i, r := range order {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:[", words[r])
		var n float64
		for _, x := range vecs[r] {
			n += x * x
		}
		for _, x := range vecs[r] {
			fmt.Fprintf(&b, "%g,", x)
		}
		fmt.Fprintf(&b, "%.6f,%d]", math.Sqrt(n), r)
	}
	b.WriteString(`},"unkVector":[` + strings.Repeat("0,", 101) + `-1]}`)
	path := filepath.Join(t.TempDir(), File)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// axis is a vector along dimension d (plus a little of d+1, so that
// vectors are not all orthogonal).
func axis(d int, f float64) []float64 {
	v := make([]float64, Dimensions)
	v[d] = f
	v[(d+1)%Dimensions] = 0.25 * f
	return v
}

func testTable(t *testing.T, maxWords int) *Table {
	t.Helper()
	words := []string{"the", "car", "\"", "automobile", "vehicle", "battery", "u.s.", "e-mail", `a\b`, "-0.5"}
	vecs := [][]float64{axis(0, 1), axis(1, 3), axis(2, 1), axis(1, -0.0001), axis(1, 2), axis(5, 1), axis(6, 1), axis(7, 1), axis(8, 1), axis(9, 1)}
	vecs[3] = axis(1, 2e-3) // parallel to car's, tiny: Load normalises
	path := fakeFile(t, words, vecs, []int{3, 0, 9, 1, 2, 5, 4, 8, 6, 7})
	tab, err := Load(path, maxWords)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestLoad(t *testing.T) {
	tab := testTable(t, 0)
	if tab.Len() != 10 {
		t.Fatalf("Len %d, want 10", tab.Len())
	}
	for want, w := range []string{"the", "car", "\"", "automobile", "vehicle", "battery", "u.s.", "e-mail", `a\b`, "-0.5"} {
		if r, ok := tab.Rank(w); !ok || r != want {
			t.Errorf("Rank(%q) = %d, %v; want %d", w, r, ok, want)
		}
		if tab.Word(want) != w {
			t.Errorf("Word(%d) = %q, want %q", want, tab.Word(want), w)
		}
	}
	// Unit vectors, within int8 rounding, in the file's direction.
	for r := range tab.Len() {
		v := tab.Vector(r)
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 0.01 {
			t.Errorf("rank %d: squared norm %v, want 1", r, n)
		}
	}
	car, auto := tab.Vector(1), tab.Vector(3)
	if c := cos(car, auto); c < 0.999 {
		t.Errorf("car and automobile (parallel in the file) have cosine %v", c)
	}
	small := testTable(t, 4)
	if small.Len() != 4 {
		t.Fatalf("maxWords 4: Len %d", small.Len())
	}
	if _, ok := small.Rank("vehicle"); ok {
		t.Error("maxWords 4 kept vehicle, rank 4")
	}
}

func TestLoadRejects(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, body, want string }{
		{"not the format", `{"hello":1}`, "no \"vectors\""},
		{"other dimensions", `{"l2NormIndex":50,"wordIndex":51,"dimensions":50,"vectors":{}}`, "header lacks"},
		{"short vector", `{"l2NormIndex":100,"wordIndex":101,"size":1,"dimensions":100,"vectors":{"a":[1,2,3]}}`, "not 102 values"},
		{"fewer than the size", `{"l2NormIndex":100,"wordIndex":101,"size":2,"dimensions":100,"vectors":{}}`, "0 vectors"},
		{"truncated", `{"l2NormIndex":100,"wordIndex":101,"size":2,"dimensions":100,"vectors":{"a":[1,`, "vectors"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

func TestWords(t *testing.T) {
	tab := testTable(t, 0)
	for _, c := range []struct {
		text string
		want []string
	}{
		{"The Car's battery", []string{"the", "car", "s", "battery"}},
		{"U.S. e-mail, well-known", []string{"u.s.", "e-mail", "well", "known"}},
		{"", nil},
		{"3.5% -- Müller", []string{"3", "5", "müller"}},
	} {
		if got := tab.Words(c.text); !slices.Equal(got, c.want) {
			t.Errorf("Words(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestEmbed(t *testing.T) {
	tab := testTable(t, 0)
	if v := tab.Embed("nothing here", 0, nil); v != nil {
		t.Errorf("a text without a known word embeds to %v, want nil", v)
	}
	// SIF: "the" (rank 0, the likeliest) weighs far less than "battery".
	v := tab.Embed("the battery", 1e-3, nil)
	if cb, ct := cos(v, tab.Vector(5)), cos(v, tab.Vector(0)); cb < 0.95 || ct > 0.3 {
		t.Errorf("the battery: cosine to battery %v, to the %v; want battery ≥ 0.95, the ≤ 0.3 (the weighs little)", cb, ct)
	}
	if c := cos(tab.Embed("automobile", 0, nil), tab.Embed("car", 0, nil)); c < 0.999 {
		t.Errorf("automobile vs car: cosine %v", c)
	}
	if v := tab.Embed("the battery", 0, func(w string) float64 {
		if w == "battery" {
			return 0
		}
		return 1
	}); cos(v, tab.Vector(0)) < 0.999 {
		t.Error("a word weighed 0 still counts")
	}
}

func TestNearest(t *testing.T) {
	tab := testTable(t, 0)
	got := tab.Nearest("car", 2, 0, 0)
	if len(got) != 2 || tab.Word(got[0].Rank) != "automobile" && tab.Word(got[0].Rank) != "vehicle" {
		t.Fatalf("Nearest(car) = %v", got)
	}
	for _, n := range got {
		if w := tab.Word(n.Rank); w != "automobile" && w != "vehicle" {
			t.Errorf("Nearest(car) holds %q", w)
		}
	}
	if got := tab.Nearest("car", 5, 4, 0.9); len(got) != 1 || tab.Word(got[0].Rank) != "automobile" {
		t.Errorf("among the first 4, cosine ≥ 0.9: %v, want automobile alone", got)
	}
	if got := tab.Nearest("unknown", 5, 0, 0); got != nil {
		t.Errorf("Nearest(unknown) = %v, want nil", got)
	}
}

func TestDecimal(t *testing.T) {
	for _, s := range []string{"0", "-0.038194", "5.821154", "341478", "2.95153011", "-3.0243", "0.000001"} {
		got, ok := decimal([]byte(s))
		var want float64
		fmt.Sscan(s, &want)
		if !ok || math.Abs(got-want) > 1e-15*math.Max(1, math.Abs(want)) {
			t.Errorf("decimal(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"1e-5", "", "-", "1.2.3", "12345678901234567"} {
		if _, ok := decimal([]byte(s)); ok {
			t.Errorf("decimal(%q) accepted", s)
		}
	}
}

func cos(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}

func TestCommonRemove(t *testing.T) {
	tab := testTable(t, 0)
	c := tab.Common(5, 1e-3)
	if n := cos(c, c); math.Abs(n-1) > 1e-5 {
		t.Fatalf("Common is not a unit vector: %v", n)
	}
	// Made of the 5 likeliest words only.
	if cos(c, tab.Vector(5)) > 0.1 || cos(c, tab.Vector(0)) < 0.3 {
		t.Errorf("Common's cosine to battery (rank 5) %v, to the (rank 0) %v", cos(c, tab.Vector(5)), cos(c, tab.Vector(0)))
	}
	v := tab.Embed("the battery", 1e-3, nil)
	if !Remove(v, c) {
		t.Fatal("Remove left nothing")
	}
	var dot, n float64
	for d := range v {
		dot += float64(v[d]) * float64(c[d])
		n += float64(v[d]) * float64(v[d])
	}
	if math.Abs(dot) > 1e-5 || math.Abs(n-1) > 1e-5 {
		t.Errorf("after Remove: projection %v, squared norm %v; want 0 and 1", dot, n)
	}
	if Remove(slices.Clone(c), c) {
		t.Error("removing a vector's own direction left something")
	}
}
