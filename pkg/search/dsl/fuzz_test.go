package dsl

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// maxDetailLen bounds error details: user input is echoed back only in
// truncated form.
const maxDetailLen = 600

func checkError(t *testing.T, err error) {
	t.Helper()
	var de *Error
	if !errors.As(err, &de) {
		t.Fatalf("error %v is %T, want *Error", err, err)
	}
	if de.Detail == "" || len(de.Detail) > maxDetailLen {
		t.Fatalf("error detail of length %d: %q", len(de.Detail), de.Detail)
	}
}

func FuzzParseFTS(f *testing.F) {
	for _, s := range []string{
		"invoice", `a b OR c -d`, `"annual report"`, `pre*`, `*N"w1 w2"`, `*N5"a b c"`,
		`*NP"p1 words" "p2 words"`, `*NP"a b" "c d" -x "e f"`, `a OR -b`, `-a`, `"unterminated`,
		`a --b - c`, "a\u00a0b", `*N1001"a b"`, `foo*bar`, `OR`, `x"y z"w`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseFTS(s)
		if err != nil {
			checkError(t, err)
			return
		}
		terms := checkFTSNode(t, n, true)
		if terms > MaxFTSTerms {
			t.Fatalf("%d terms accepted", terms)
		}
		text := n.String()
		again, err := ParseFTS(text)
		if err != nil {
			t.Fatalf("String() %q of %q does not parse: %v", text, s, err)
		}
		if !reflect.DeepEqual(again, n) {
			t.Fatalf("String() %q of %q parses to a different tree:\n%#v\n%#v", text, s, again, n)
		}
		if again.String() != text {
			t.Fatalf("String() is not stable: %q then %q", text, again.String())
		}
	})
}

// checkFTSNode checks the documented invariants of a parsed FTS tree and
// returns its number of words.
func checkFTSNode(t *testing.T, n FTSNode, root bool) int {
	t.Helper()
	checkText := func(s string, star bool) {
		if s == "" || strings.ContainsRune(s, '"') || strings.IndexFunc(s, unicode.IsSpace) >= 0 || (!star && strings.ContainsRune(s, '*')) {
			t.Fatalf("bad text %q in %#v", s, n)
		}
	}
	phrase := func(p Phrase) int {
		if len(p.Words) == 0 {
			t.Fatalf("empty phrase in %#v", n)
		}
		for _, w := range p.Words {
			checkText(w, true)
		}
		return len(p.Words)
	}
	switch n := n.(type) {
	case *Word:
		checkText(n.Text, false)
		return 1
	case *Prefix:
		checkText(n.Prefix, false)
		return 1
	case *Phrase:
		return phrase(*n)
	case *Near:
		if len(n.Clauses) < 2 || n.Distance < 0 || n.Distance > MaxNearDistance {
			t.Fatalf("bad near %#v", n)
		}
		terms := 0
		for _, c := range n.Clauses {
			terms += phrase(c)
		}
		return terms
	case *AnyOf:
		if len(n.Nodes) < 2 {
			t.Fatalf("AnyOf with %d nodes", len(n.Nodes))
		}
		terms := 0
		for _, sub := range n.Nodes {
			if !isAtom(sub) {
				t.Fatalf("AnyOf holds %T", sub)
			}
			terms += checkFTSNode(t, sub, false)
		}
		return terms
	case *AllOf:
		if !root || len(n.Nodes) < 2 {
			t.Fatalf("AllOf nested or with %d nodes", len(n.Nodes))
		}
		terms, included := 0, 0
		for _, sub := range n.Nodes {
			switch sub := sub.(type) {
			case *Exclude:
				if !isAtom(sub.Node) {
					t.Fatalf("Exclude holds %T", sub.Node)
				}
				terms += checkFTSNode(t, sub.Node, false)
			case *AnyOf:
				included++
				terms += checkFTSNode(t, sub, false)
			default:
				if !isAtom(sub) {
					t.Fatalf("AllOf holds %T", sub)
				}
				included++
				terms += checkFTSNode(t, sub, false)
			}
		}
		if included == 0 {
			t.Fatalf("AllOf of exclusions only")
		}
		return terms
	default:
		t.Fatalf("unexpected node %T", n)
		return 0
	}
}

func isAtom(n FTSNode) bool {
	switch n.(type) {
	case *Word, *Phrase, *Prefix, *Near:
		return true
	}
	return false
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"where":{"eq":{"field":"doc_type","value":"Invoice"}}}`,
		`{"where":{"and":[{"fts":{"field":"content","query":"tax -draft"}},{"vector":{"target":"content","query":"x"}},{"lte":{"field":"date","value":"2024-01-31"}}]}}`,
		`{"where":{"or":[{"in":{"field":"filesbelongto","value":[1,2]}},{"not":{"startswith":{"field":"doc_number","value":"A"}}}]}}`,
		`{"where":{"nin":{"field":"entry_date","value":["2024-01-01","2024-01-02T03:04:05+02:00"]}},"select":["doc_type","_highlights"],"sort":[{"field":"date","direction":"desc"}],"limit":50,"offset":100,"options":{"include_highlights":true,"highlight_length":500,"vector_k":10}}`,
		`{"where":{"gt":{"field":"id","value":9007199254740992}}}`,
		`{"where":{"or":[{"vector":{"target":"metadata","query":"x"}}]}}`,
		`{"limit":2.5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var body map[string]any
		if err := json.Unmarshal(data, &body); err != nil || body == nil {
			return
		}
		req, err := RequestFromMap(body)
		if err != nil {
			checkError(t, err)
			return
		}
		q, err := Parse(req)
		if err != nil {
			checkError(t, err)
			return
		}
		checkQuery(t, q)
		again, err := Parse(q.Request())
		if err != nil {
			t.Fatalf("q.Request() does not parse: %v", err)
		}
		if !reflect.DeepEqual(again, q) {
			t.Fatalf("q.Request() parses to a different query:\n%#v\n%#v", again, q)
		}
		// The canonical request survives JSON too.
		b, err := json.Marshal(q.Request())
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if req, err = RequestFromMap(body); err == nil {
			again, err = Parse(req)
		}
		if err != nil || !reflect.DeepEqual(again, q) {
			t.Fatalf("JSON of q.Request() %s does not give q back: %v", b, err)
		}
	})
}

func checkQuery(t *testing.T, q *Query) {
	t.Helper()
	if q.Limit < 1 || q.Limit > MaxLimit || q.Offset < 0 || q.Offset+q.Limit > MaxWindow {
		t.Fatalf("bad page %d+%d", q.Offset, q.Limit)
	}
	if len(q.Select) == 0 || q.Select[0] != FieldID || len(q.Sort) == 0 {
		t.Fatalf("bad select %v or sort %v", q.Select, q.Sort)
	}
	if _, err := q.Plan(); err != nil {
		t.Fatalf("Plan of a parsed query: %v", err)
	}
	clauses := 0
	var depth func(c Clause) int
	depth = func(c Clause) int {
		clauses++
		d := 0
		switch c := c.(type) {
		case *And:
			for _, s := range c.Clauses {
				d = max(d, depth(s))
			}
		case *Or:
			for _, s := range c.Clauses {
				d = max(d, depth(s))
			}
		case *Not:
			d = depth(c.Clause)
		case *In:
			if len(c.Values) == 0 || len(c.Values) > MaxInValues {
				t.Fatalf("in with %d values", len(c.Values))
			}
		case *FTS:
			checkFTSNode(t, c.Root, true)
		case *Compare:
			if c.Value.Day && c.Op != OpEq && c.Op != OpNe {
				t.Fatalf("whole-day value in %s", c.Op)
			}
		case *Vector, *TextMatch:
		default:
			t.Fatalf("unexpected clause %s", fmt.Sprintf("%T", c))
		}
		return d + 1
	}
	if q.Where != nil {
		if d := depth(q.Where); d > MaxDepth || clauses > MaxClauses {
			t.Fatalf("depth %d, %d clauses accepted", d, clauses)
		}
	}
}
