package wordnet

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// testdata holds WordNet 3.0's own lines (index, data, exception lists
// and sense counts) for car, usa, ai, heart_attack, high_blood_pressure,
// mouse, doctor, begin (noun and verb), happy (with its satellites'
// cluster heads), quickly, kidney and renal (which pertains to it), with
// the licence header lines the data files begin with, and the licence.

func openTestdata(t *testing.T) *WordNet {
	t.Helper()
	wn, err := Open("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return wn
}

func TestSynonyms(t *testing.T) {
	wn := openTestdata(t)
	for _, c := range []struct {
		name   string
		phrase string
		senses Senses
		want   []string
	}{
		{name: "top sense", phrase: "car", senses: TopSense, want: []string{"auto", "automobile", "machine", "motorcar"}},
		{name: "tagged senses", phrase: "car", senses: TaggedSenses,
			want: []string{"auto", "automobile", "machine", "motorcar", "railcar", "railway car", "railroad car"}},
		{name: "first sense of each part of speech", phrase: "begin", senses: FirstSense,
			want: []string{"menachem begin", "get down", "get", "start out", "start", "set about", "set out", "commence"}},
		{name: "top sense by tag count: the verb", phrase: "begin", senses: TopSense,
			want: []string{"get down", "get", "start out", "start", "set about", "set out", "commence"}},
		{name: "all senses", phrase: "ai", senses: AllSenses,
			want: []string{"army intelligence", "artificial intelligence", "three-toed sloth", "bradypus tridactylus", "artificial insemination"}},
		{name: "untagged: the first sense", phrase: "AI", senses: TaggedSenses, want: []string{"army intelligence"}},
		{name: "abbreviation, case and spaces", phrase: "  USA ", senses: TopSense,
			want: []string{"united states", "united states of america", "america", "the states", "us", "u.s.", "u.s.a."}},
		{name: "phrase", phrase: "high blood pressure", senses: AllSenses, want: []string{"hypertension"}},
		{name: "phrase with underscores", phrase: "high_blood_pressure", senses: TopSense, want: []string{"hypertension"}},
		{name: "an entry without synonyms", phrase: "heart attack", senses: AllSenses, want: nil},
		{name: "exception list", phrase: "mice", senses: TopSense, want: nil},
		{name: "exception list, verb", phrase: "began", senses: TopSense,
			want: []string{"get down", "get", "start out", "start", "set about", "set out", "commence"}},
		{name: "detachment", phrase: "cars", senses: TopSense, want: []string{"auto", "automobile", "machine", "motorcar"}},
		{name: "detachment of a phrase's last word", phrase: "heart attacks", senses: TopSense, want: nil},
		{name: "adjective marker stripped", phrase: "happy", senses: AllSenses, want: []string{"felicitous", "glad", "well-chosen"}},
		{name: "adverb", phrase: "quickly", senses: FirstSense, want: []string{"rapidly", "speedily", "chop-chop", "apace"}},
		{name: "unknown", phrase: "zebra", senses: AllSenses, want: nil},
		{name: "empty", phrase: " ", senses: AllSenses, want: nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := wn.Synonyms(c.phrase, c.senses); !slices.Equal(got, c.want) {
				t.Errorf("Synonyms(%q, %v) = %q, want %q", c.phrase, c.senses, got, c.want)
			}
		})
	}
}

func TestLemma(t *testing.T) {
	wn := openTestdata(t)
	for _, c := range []struct {
		phrase string
		want   string
		ok     bool
	}{
		{phrase: "Heart Attack", want: "heart_attack", ok: true},
		{phrase: "heart attacks", want: "heart_attack", ok: true},
		{phrase: "mice", want: "mouse", ok: true},
		{phrase: "began", want: "begin", ok: true},
		{phrase: "happier", want: "happy", ok: true},
		{phrase: "doctors", want: "doctor", ok: true},
		{phrase: "heart", want: "", ok: false},
	} {
		got, ok := wn.Lemma(c.phrase)
		if got != c.want || ok != c.ok {
			t.Errorf("Lemma(%q) = %q, %v, want %q, %v", c.phrase, got, ok, c.want, c.ok)
		}
	}
	if wn.MaxWords() != 3 {
		t.Errorf("MaxWords = %d, want 3 (high_blood_pressure)", wn.MaxWords())
	}
}

func TestSenseCounts(t *testing.T) {
	wn := openTestdata(t)
	lemma, _ := wn.Lemma("car")
	var counts []int
	for _, s := range wn.SensesOf(lemma) {
		counts = append(counts, s.Count)
	}
	if want := []int{71, 2, 0, 0, 0}; !slices.Equal(counts, want) {
		t.Errorf("car's sense counts %v, want %v (cntlist.rev)", counts, want)
	}
	// Satellite adjectives' sense keys carry their cluster head's first
	// word: {felicitous, happy} (head fortunate) is happy%5:00:00:
	// fortunate:00, counted 2. cntlist.rev's happy%5:00:00:glad:00 and
	// contented:00 name heads that data.adj's clusters do not have
	// ({glad, happy}'s head is willing): they count for no sense.
	lemma, _ = wn.Lemma("happy")
	counts = counts[:0]
	for _, s := range wn.SensesOf(lemma) {
		counts = append(counts, s.Count)
	}
	if want := []int{37, 2, 0, 0}; !slices.Equal(counts, want) {
		t.Errorf("happy's sense counts %v, want %v", counts, want)
	}
}

func TestParseSenses(t *testing.T) {
	for _, s := range []Senses{AllSenses, FirstSense, TaggedSenses, TopSense} {
		got, err := ParseSenses(" " + s.String() + " ")
		if err != nil || got != s {
			t.Errorf("ParseSenses(%q) = %v, %v", s.String(), got, err)
		}
	}
	if _, err := ParseSenses("most"); err == nil {
		t.Error("ParseSenses(most): no error")
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil {
		t.Error("Open of an empty directory: no error")
	}
	// A data file that lacks a synset the index names.
	for _, n := range Files {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		if n == "data.noun" {
			b = b[:len(b)/2]
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(dir); err == nil {
		t.Error("Open with a truncated data.noun: no error")
	}
}

func TestPertainyms(t *testing.T) {
	wn := openTestdata(t)
	for _, c := range []struct {
		phrase string
		want   []string
	}{
		{phrase: "kidney", want: []string{"renal", "nephritic"}},
		{phrase: "kidneys", want: []string{"renal", "nephritic"}},
		{phrase: "car", want: nil}, // automotive's line is not in testdata
		{phrase: "renal", want: nil},
	} {
		if got := wn.Pertainyms(c.phrase, TopSense); !slices.Equal(got, c.want) {
			t.Errorf("Pertainyms(%q) = %q, want %q", c.phrase, got, c.want)
		}
	}
}

func TestHypernyms(t *testing.T) {
	wn := openTestdata(t)
	for _, c := range []struct {
		phrase string
		want   []string
	}{
		{phrase: "kidney", want: []string{"excretory organ", "urinary organ"}}, // {kidney} alone
		{phrase: "car", want: nil}, // {car, auto, …}: synonyms, no hypernyms
		{phrase: "zebra", want: nil},
	} {
		if got := wn.Hypernyms(c.phrase, TopSense); !slices.Equal(got, c.want) {
			t.Errorf("Hypernyms(%q) = %q, want %q", c.phrase, got, c.want)
		}
	}
}
