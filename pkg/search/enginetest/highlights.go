package enginetest

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/search/highlight"
)

func longText() string {
	var b strings.Builder
	for i := 1; i <= 60; i++ {
		if i == 5 || i == 30 || i == 55 {
			fmt.Fprintf(&b, "Sentence %d has the needle in it. ", i)
			continue
		}
		fmt.Fprintf(&b, "Sentence %d is filler text about nothing. ", i)
	}
	return b.String()
}

var hlDocs = []engine.Document{
	{ID: 301, Content: `<script>alert('x')</script> The quick Fox & the <b>bold</b> hound said "hi".`},
	{ID: 302, Content: longText()},
	{ID: 303, DocType: ptr("T"), Content: "quick brown animals"},
}

// tagRE finds anything that looks like a tag.
var tagRE = regexp.MustCompile(`<[^>]*>`)

// emphasised returns the texts inside <b>…</b>, lowercased.
func emphasised(snippets []string) []string {
	var out []string
	for _, s := range snippets {
		for _, m := range regexp.MustCompile(`<b>(.*?)</b>`).FindAllStringSubmatch(s, -1) {
			out = append(out, strings.ToLower(m[1]))
		}
	}
	return out
}

// checkSnippets checks the invariants of every snippet: only <b> and </b>
// tags, balanced, within the visible length, at most 3.
func checkSnippets(t *testing.T, id int64, snippets []string, maxLen int) {
	t.Helper()
	if len(snippets) > highlight.MaxSnippets {
		t.Errorf("doc %d: %d snippets, want at most %d", id, len(snippets), highlight.MaxSnippets)
	}
	for _, s := range snippets {
		open := 0
		for _, tag := range tagRE.FindAllString(s, -1) {
			switch tag {
			case "<b>":
				open++
			case "</b>":
				open--
			default:
				t.Errorf("doc %d: snippet %q has tag %q", id, s, tag)
			}
			if open < 0 || open > 1 {
				t.Errorf("doc %d: unbalanced <b> in %q", id, s)
			}
		}
		if open != 0 {
			t.Errorf("doc %d: unbalanced <b> in %q", id, s)
		}
		if n := highlight.VisibleLen(s); n > maxLen {
			t.Errorf("doc %d: snippet of %d visible characters, want at most %d: %q", id, n, maxLen, s)
		}
		if strings.ContainsAny(tagRE.ReplaceAllString(s, ""), `<>"`) {
			t.Errorf("doc %d: unescaped text in %q", id, s)
		}
	}
}

func testHighlights(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	e := load(t, newEngine, hlDocs)
	hl := `"options": {"include_highlights": true}`

	t.Run("escaped content, matched word emphasised", func(t *testing.T) {
		res := search(t, e, body(ftsWhere("fox"), hl), admin)
		wantOrder(t, res, []int64{301})
		if len(res.Hits) != 1 {
			return
		}
		sn := res.Hits[0].Highlights
		checkSnippets(t, 301, sn, 300)
		if len(sn) != 1 {
			t.Fatalf("snippets = %q, want 1", sn)
		}
		s := sn[0]
		for _, want := range []string{"<b>Fox</b>", "&lt;script&gt;", "&lt;b&gt;bold&lt;/b&gt;", "&amp;"} {
			if !strings.Contains(s, want) {
				t.Errorf("snippet %q lacks %q", s, want)
			}
		}
		if strings.Contains(s, "<script>") {
			t.Errorf("snippet %q contains a raw <script>", s)
		}
	})
	t.Run("stemmed match emphasised", func(t *testing.T) {
		res := search(t, e, body(ftsWhere("foxes"), hl), admin)
		if len(res.Hits) != 1 || strings.Join(emphasised(res.Hits[0].Highlights), ",") != "fox" {
			t.Errorf("hits = %+v, want 301 with fox emphasised", res.Hits)
		}
	})
	t.Run("phrase emphasised", func(t *testing.T) {
		res := search(t, e, body(ftsWhere(`"quick fox"`), hl), admin)
		if len(res.Hits) != 1 {
			t.Fatalf("hits = %v, want 301", ids(res))
		}
		em := strings.Join(emphasised(res.Hits[0].Highlights), " ")
		if !strings.Contains(em, "quick") || !strings.Contains(em, "fox") {
			t.Errorf("emphasised %q, want quick and fox", em)
		}
	})
	t.Run("excluded and metadata terms not emphasised", func(t *testing.T) {
		res := search(t, e, body(`{"or": [`+ftsWhere("quick -zebra")+`, `+eq("eq", "doc_type", `"T"`)+`]}`, hl, `"limit": 10`), admin)
		wantSet(t, res, []int64{301, 303})
		for _, h := range res.Hits {
			checkSnippets(t, h.ID, h.Highlights, 300)
			if em := emphasised(h.Highlights); len(em) != 1 || em[0] != "quick" {
				t.Errorf("doc %d: emphasised %q, want [quick]", h.ID, em)
			}
		}
	})
	t.Run("length limit and at most 3 snippets", func(t *testing.T) {
		res := search(t, e, body(ftsWhere("needle"), `"options": {"include_highlights": true, "highlight_length": 100}`), admin)
		if len(res.Hits) != 1 {
			t.Fatalf("hits = %v, want 302", ids(res))
		}
		sn := res.Hits[0].Highlights
		checkSnippets(t, 302, sn, 100)
		if len(sn) != 3 {
			t.Errorf("got %d snippets, want 3 (three distant matches): %q", len(sn), sn)
		}
		for _, s := range sn {
			if !strings.Contains(s, "<b>needle</b>") {
				t.Errorf("snippet %q lacks <b>needle</b>", s)
			}
		}
	})
	t.Run("many matches, long limit", func(t *testing.T) {
		res := search(t, e, body(ftsWhere("sentence"), `"options": {"include_highlights": true, "highlight_length": 2000}`), admin)
		if len(res.Hits) != 1 {
			t.Fatalf("hits = %v, want 302", ids(res))
		}
		sn := res.Hits[0].Highlights
		checkSnippets(t, 302, sn, 2000)
		if len(sn) == 0 {
			t.Error("no snippets")
		}
	})
	t.Run("select _highlights asks for them", func(t *testing.T) {
		res := search(t, e, body(ftsWhere("needle"), `"select": ["_highlights"]`), admin)
		if len(res.Hits) != 1 || len(res.Hits[0].Highlights) == 0 {
			t.Errorf("hits = %+v, want snippets", res.Hits)
		}
	})
	t.Run("not asked: none", func(t *testing.T) {
		res := search(t, e, body(ftsWhere("needle")), admin)
		if len(res.Hits) != 1 || res.Hits[0].Highlights != nil {
			t.Errorf("hits = %+v, want no snippets", res.Hits)
		}
	})
	t.Run("no fts clause: none", func(t *testing.T) {
		res := search(t, e, body(eq("eq", "doc_type", `"T"`), hl), admin)
		if len(res.Hits) != 1 || res.Hits[0].Highlights != nil {
			t.Errorf("hits = %+v, want no snippets", res.Hits)
		}
	})
}
