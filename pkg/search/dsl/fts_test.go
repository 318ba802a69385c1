package dsl

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func w(s string) *Word           { return &Word{Text: s} }
func pre(s string) *Prefix       { return &Prefix{Prefix: s} }
func ph(s string) *Phrase        { return &Phrase{Words: strings.Fields(s)} }
func ex(n FTSNode) *Exclude      { return &Exclude{Node: n} }
func anyOf(ns ...FTSNode) *AnyOf { return &AnyOf{Nodes: ns} }
func allOf(ns ...FTSNode) *AllOf { return &AllOf{Nodes: ns} }

// near builds a Near; each clause string is one clause (split into words).
func near(distance int, clauses ...string) *Near {
	n := &Near{Distance: distance}
	for _, c := range clauses {
		n.Clauses = append(n.Clauses, *ph(c))
	}
	return n
}

func TestParseFTSBuildsTheTreeAndCanonicalString(t *testing.T) {
	tests := []struct {
		name  string
		query string
		want  FTSNode
		canon string // String() of the result; empty means the query itself
	}{
		{name: "single word", query: "invoice", want: w("invoice")},
		{name: "case and punctuation kept", query: "E-Mail's", want: w("E-Mail's")},
		{name: "implicit and", query: "w1 w2 w3", want: allOf(w("w1"), w("w2"), w("w3"))},
		{name: "surrounding and repeated whitespace", query: "  a \t\n b  ", want: allOf(w("a"), w("b")), canon: "a b"},
		{name: "unicode whitespace", query: "a\u00a0b\u2003c", want: allOf(w("a"), w("b"), w("c")), canon: "a b c"},
		{name: "unicode word", query: "Müller straße", want: allOf(w("Müller"), w("straße"))},
		{name: "phrase", query: `"annual report"`, want: ph("annual report")},
		{name: "one-word phrase", query: `"running"`, want: ph("running")},
		{name: "phrase whitespace normalised", query: `" annual   report "`, want: ph("annual report"), canon: `"annual report"`},
		{name: "phrase keeps operators literal", query: `"a OR -b c*"`, want: ph("a OR -b c*")},
		{name: "word then phrase without space", query: `foo"bar baz"`, want: allOf(w("foo"), ph("bar baz")), canon: `foo "bar baz"`},
		{name: "phrase then word without space", query: `"bar baz"foo`, want: allOf(ph("bar baz"), w("foo")), canon: `"bar baz" foo`},
		{name: "or", query: "a OR b", want: anyOf(w("a"), w("b"))},
		{name: "or chain", query: "a OR b OR c", want: anyOf(w("a"), w("b"), w("c"))},
		{name: "or binds tighter than and", query: "a b OR c", want: allOf(w("a"), anyOf(w("b"), w("c")))},
		{name: "two or groups", query: "a OR b c OR d", want: allOf(anyOf(w("a"), w("b")), anyOf(w("c"), w("d")))},
		{name: "lowercase or is a word", query: "a or b", want: allOf(w("a"), w("or"), w("b"))},
		{name: "Or is a word", query: "a Or b", want: allOf(w("a"), w("Or"), w("b"))},
		{name: "OR glued to a word is a word", query: "ORb aOR", want: allOf(w("ORb"), w("aOR"))},
		{name: "or of phrase prefix near", query: `"a b" OR c* OR *N"x y"`, want: anyOf(ph("a b"), pre("c"), near(10, "x", "y"))},
		{name: "exclusion", query: "a -b", want: allOf(w("a"), ex(w("b")))},
		{name: "exclusion first", query: "-b a", want: allOf(ex(w("b")), w("a"))},
		{name: "excluded phrase", query: `a -"b c"`, want: allOf(w("a"), ex(ph("b c")))},
		{name: "excluded prefix", query: "a -b*", want: allOf(w("a"), ex(pre("b")))},
		{name: "excluded near", query: `a -*N3"b c"`, want: allOf(w("a"), ex(near(3, "b", "c")))},
		{name: "excluded OR is the word OR", query: "a -OR", want: allOf(w("a"), ex(w("OR")))},
		{name: "double dash excludes a dashed word", query: "a --b", want: allOf(w("a"), ex(w("-b")))},
		{name: "lone dash is a word", query: "a - b", want: allOf(w("a"), w("-"), w("b"))},
		{name: "trailing dash is a word", query: "a -", want: allOf(w("a"), w("-"))},
		{name: "inner dash kept", query: "e-mail", want: w("e-mail")},
		{name: "prefix", query: "pre*", want: pre("pre")},
		{name: "one-letter prefix", query: "p*", want: pre("p")},
		{name: "OR prefix is a prefix", query: "OR*", want: pre("OR")},
		{name: "near default distance", query: `*N"w1 w2"`, want: near(10, "w1", "w2")},
		{name: "near explicit distance", query: `*N5"w1 w2"`, want: near(5, "w1", "w2")},
		{name: "near explicit default distance", query: `*N10"w1 w2"`, want: near(10, "w1", "w2"), canon: `*N"w1 w2"`},
		{name: "near zero", query: `*N0"a b"`, want: near(0, "a", "b")},
		{name: "near max", query: `*N1000"a b"`, want: near(1000, "a", "b")},
		{name: "near leading zeros", query: `*N007"a b"`, want: near(7, "a", "b"), canon: `*N7"a b"`},
		{name: "near three words", query: `*N"a b c"`, want: near(10, "a", "b", "c")},
		{name: "near words keep operators literal", query: `*N"a OR"`, want: near(10, "a", "OR")},
		{name: "np", query: `*NP"p1 words" "p2 words"`, want: near(10, "p1 words", "p2 words")},
		{name: "np three groups", query: `*NP"a b" "c" "d e"`, want: near(10, "a b", "c", "d e")},
		{name: "np with distance", query: `*NP4"a b" "c d"`, want: near(4, "a b", "c d")},
		{name: "np single words renders as n", query: `*NP"a" "b"`, want: near(10, "a", "b"), canon: `*N"a b"`},
		{name: "np groups without space", query: `*NP"a b""c d"`, want: near(10, "a b", "c d"), canon: `*NP"a b" "c d"`},
		{name: "np ends at a word", query: `*NP"a b" "c d" x "e f"`, want: allOf(near(10, "a b", "c d"), w("x"), ph("e f"))},
		{name: "np ends at OR", query: `*NP"a b" "c d" OR "e f"`, want: anyOf(near(10, "a b", "c d"), ph("e f"))},
		{name: "np ends at exclusion", query: `*NP"a b" "c d" -x "e f"`, want: allOf(near(10, "a b", "c d"), ex(w("x")), ph("e f"))},
		{name: "near then phrase", query: `*N"a b" "c d"`, want: allOf(near(10, "a", "b"), ph("c d"))},
		{name: "everything combined", query: `tax "annual report" OR summary* -draft *N5"net income" -"x y"`,
			want: allOf(w("tax"), anyOf(ph("annual report"), pre("summary")), ex(w("draft")), near(5, "net", "income"), ex(ph("x y")))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFTS(tt.query)
			if err != nil {
				t.Fatalf("ParseFTS(%q) error: %v", tt.query, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseFTS(%q) = %s (%#v), want %s", tt.query, got, got, tt.want)
			}
			canon := tt.canon
			if canon == "" {
				canon = tt.query
			}
			if s := got.String(); s != canon {
				t.Errorf("String() = %q, want %q", s, canon)
			}
			again, err := ParseFTS(got.String())
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("re-parsing %q: %v, %v", got.String(), again, err)
			}
		})
	}
}

func TestParseFTSErrors(t *testing.T) {
	tests := []struct {
		name  string
		query string
		want  string
	}{
		{name: "empty", query: "", want: "Invalid fts query: the query is empty"},
		{name: "blank", query: " \t\n", want: "Invalid fts query: the query is empty"},
		{name: "too long", query: strings.Repeat("a", MaxFTSQueryBytes+1), want: "Invalid fts query: longer than 8192 bytes"},
		{name: "invalid utf8", query: "a \xff", want: "Invalid fts query: not valid UTF-8"},
		{name: "too many words", query: strings.Repeat("a ", MaxFTSTerms+1), want: "Invalid fts query: more than 512 terms"},
		{name: "too many phrase words", query: `"` + strings.Repeat("a ", MaxFTSTerms+1) + `"`, want: "Invalid fts query: more than 512 terms"},
		{name: "only exclusion", query: "-a", want: "Invalid fts query: at least one term must not be excluded"},
		{name: "only exclusions", query: `-a -"b c" -*N"d e"`, want: "Invalid fts query: at least one term must not be excluded"},
		{name: "leading OR", query: "OR a", want: "Invalid fts query at position 1: OR must stand between two terms"},
		{name: "trailing OR", query: "a OR", want: "Invalid fts query at position 3: OR must stand between two terms"},
		{name: "lone OR", query: "OR", want: "Invalid fts query at position 1: OR must stand between two terms"},
		{name: "double OR", query: "a OR OR b", want: "Invalid fts query at position 3: OR must stand between two terms"},
		{name: "OR before exclusion", query: "a OR -b", want: "Invalid fts query at position 6: an excluded term cannot be combined with OR"},
		{name: "exclusion before OR", query: "a -b OR c", want: "Invalid fts query at position 3: an excluded term cannot be combined with OR"},
		{name: "unterminated quote", query: `a "b c`, want: "Invalid fts query at position 3: unterminated quote"},
		{name: "unterminated quote position counts characters", query: `ü "b`, want: "Invalid fts query at position 3: unterminated quote"},
		{name: "empty phrase", query: `a ""`, want: "Invalid fts query at position 3: empty phrase"},
		{name: "blank phrase", query: `"  "`, want: "Invalid fts query at position 1: empty phrase"},
		{name: "lone star", query: "a *", want: `Invalid fts query at position 3: unexpected *: use it at the end of a word for a prefix (pre*) or as *N"w1 w2" for NEAR`},
		{name: "leading star", query: "*foo", want: `Invalid fts query at position 1: unexpected *: use it at the end of a word for a prefix (pre*) or as *N"w1 w2" for NEAR`},
		{name: "inner star", query: "fo*o", want: `Invalid fts query at position 3: unexpected *: use it at the end of a word for a prefix (pre*) or as *N"w1 w2" for NEAR`},
		{name: "double star", query: "foo**", want: `Invalid fts query at position 4: unexpected *: use it at the end of a word for a prefix (pre*) or as *N"w1 w2" for NEAR`},
		{name: "lowercase n", query: `*n"a b"`, want: `Invalid fts query at position 1: unexpected *: use it at the end of a word for a prefix (pre*) or as *N"w1 w2" for NEAR`},
		{name: "near without quotes", query: "*N a b", want: `Invalid fts query at position 1: *N must be followed directly by a quoted group, as in *N"w1 w2"`},
		{name: "near at end", query: "a *N", want: `Invalid fts query at position 3: *N must be followed directly by a quoted group, as in *N"w1 w2"`},
		{name: "np without quotes", query: "*NP a", want: `Invalid fts query at position 1: *NP must be followed directly by a quoted group, as in *NP"w1 w2"`},
		{name: "near distance then letter", query: `*N5x"a b"`, want: `Invalid fts query at position 1: *N must be followed directly by a quoted group, as in *N"w1 w2"`},
		{name: "near distance too large", query: `*N1001"a b"`, want: "Invalid fts query at position 3: NEAR distance must be between 0 and 1000"},
		{name: "near distance huge", query: `*N99999999999999999999999"a b"`, want: "Invalid fts query at position 3: NEAR distance must be between 0 and 1000"},
		{name: "near one word", query: `*N"a"`, want: "Invalid fts query at position 1: *N needs at least two words"},
		{name: "near empty", query: `*N""`, want: "Invalid fts query at position 3: empty phrase"},
		{name: "near unterminated", query: `*N"a b`, want: "Invalid fts query at position 3: unterminated quote"},
		{name: "np one group", query: `*NP"a b"`, want: "Invalid fts query at position 1: *NP needs at least two quoted phrases"},
		{name: "np empty second group", query: `*NP"a b" ""`, want: "Invalid fts query at position 10: empty phrase"},
		{name: "np unterminated second group", query: `*NP"a b" "c`, want: "Invalid fts query at position 10: unterminated quote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFTS(tt.query)
			if err == nil {
				t.Fatalf("ParseFTS(%q) = %s, want error %q", tt.query, got, tt.want)
			}
			var de *Error
			if !errors.As(err, &de) {
				t.Fatalf("error %v is %T, want *Error", err, err)
			}
			if de.Detail != tt.want {
				t.Errorf("ParseFTS(%q) error\n got %q\nwant %q", tt.query, de.Detail, tt.want)
			}
		})
	}
}

func TestPhraseTextCollapsesWhitespace(t *testing.T) {
	n, err := ParseFTS("\"  Annual\treport  2024 \"")
	if err != nil {
		t.Fatal(err)
	}
	if got := n.(*Phrase).Text(); got != "Annual report 2024" {
		t.Errorf("Text() = %q", got)
	}
}

func TestParseFTSLimitsAccepted(t *testing.T) {
	q := strings.TrimSpace(strings.Repeat("a ", MaxFTSTerms))
	if _, err := ParseFTS(q); err != nil {
		t.Errorf("%d words: %v", MaxFTSTerms, err)
	}
	long := strings.Repeat("a", MaxFTSQueryBytes)
	if _, err := ParseFTS(long); err != nil {
		t.Errorf("%d bytes: %v", MaxFTSQueryBytes, err)
	}
}
