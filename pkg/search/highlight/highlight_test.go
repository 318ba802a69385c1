package highlight

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// spansOf returns the spans of every occurrence of word in text.
func spansOf(text string, words ...string) []Span {
	var out []Span
	for _, w := range words {
		for i := 0; ; {
			j := strings.Index(text[i:], w)
			if j < 0 {
				break
			}
			out = append(out, Span{Start: i + j, End: i + j + len(w)})
			i += j + len(w)
		}
	}
	return out
}

func TestSnippetsEscapeMarkAndFitMatchesInMaxLen(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor sit amet ", 40) // 1080 chars
	cases := []struct {
		name   string
		text   string
		spans  []Span
		maxLen int
		want   []string
	}{
		{name: "whole short text", text: "the quick fox", spans: spansOf("the quick fox", "quick"), maxLen: 100,
			want: []string{"the <b>quick</b> fox"}},
		{name: "escaping", text: `<script>x</script> & "fox" 'y'`, spans: spansOf(`<script>x</script> & "fox" 'y'`, "fox"), maxLen: 100,
			want: []string{"&lt;script&gt;x&lt;/script&gt; &amp; &#34;<b>fox</b>&#34; &#39;y&#39;"}},
		{name: "escaped match", text: "a <b> c", spans: []Span{{2, 5}}, maxLen: 100, want: []string{"a <b>&lt;b&gt;</b> c"}},
		{name: "no spans", text: "text", spans: nil, maxLen: 100, want: nil},
		{name: "spans out of range dropped", text: "text", spans: []Span{{10, 12}, {-3, -1}}, maxLen: 100, want: nil},
		{name: "overlapping spans merged", text: "abcdef", spans: []Span{{0, 3}, {2, 4}, {4, 5}}, maxLen: 100, want: []string{"<b>abcde</b>f"}},
		{name: "control characters as spaces", text: "a\nfox\tb", spans: spansOf("a\nfox\tb", "fox"), maxLen: 100, want: []string{"a <b>fox</b> b"}},
		{name: "long match cut", text: strings.Repeat("x", 150), spans: []Span{{0, 150}}, maxLen: 100,
			want: []string{"<b>" + strings.Repeat("x", 100) + "</b>"}},
		{name: "context cut at word boundaries", text: "one two three four five six seven eight nine ten eleven twelve", spans: spansOf("one two three four five six seven eight nine ten eleven twelve", "six"), maxLen: 20,
			want: []string{"five <b>six</b> seven"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Snippets(tc.text, tc.spans, tc.maxLen)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("Snippets = %q, want %q", got, tc.want)
			}
			for _, s := range got {
				if n := VisibleLen(s); n > tc.maxLen {
					t.Errorf("snippet %q: %d visible characters > %d", s, n, tc.maxLen)
				}
			}
		})
	}

	t.Run("three best windows in document order", func(t *testing.T) {
		text := long[:200] + "fox fox fox " + long[:300] + "fox " + long[:300] + "fox fox " + long[:200] + "fox"
		got := Snippets(text, spansOf(text, "fox"), 60)
		if len(got) != 3 {
			t.Fatalf("got %d snippets: %q", len(got), got)
		}
		if c := strings.Count(got[0], "<b>fox</b>"); c != 3 {
			t.Errorf("first snippet has %d matches, want 3: %q", c, got[0])
		}
		if c := strings.Count(got[2], "<b>fox</b>"); c != 2 {
			t.Errorf("third snippet has %d matches, want 2: %q", c, got[2])
		}
		for _, s := range got {
			if n := VisibleLen(s); n > 60 {
				t.Errorf("snippet %q: %d visible characters", s, n)
			}
		}
	})
	t.Run("multi-byte text", func(t *testing.T) {
		text := strings.Repeat("ünïcödé ", 30) + "Straße " + strings.Repeat("ünïcödé ", 30)
		got := Snippets(text, spansOf(text, "Straße"), 50)
		if len(got) != 1 || !strings.Contains(got[0], "<b>Straße</b>") || VisibleLen(got[0]) > 50 || !utf8.ValidString(got[0]) {
			t.Errorf("Snippets = %q", got)
		}
	})
	t.Run("span inside a multi-byte character is widened", func(t *testing.T) {
		got := Snippets("aéb", []Span{{2, 3}}, 10)
		if len(got) != 1 || got[0] != "a<b>é</b>b" {
			t.Errorf("Snippets = %q", got)
		}
	})
	t.Run("many spans stay bounded", func(t *testing.T) {
		text := strings.Repeat("fox ", 50000)
		got := Snippets(text, spansOf(text, "fox"), 300)
		if len(got) != 3 {
			t.Errorf("got %d snippets", len(got))
		}
	})
}

func TestVisibleLenAndClip(t *testing.T) {
	cases := []struct {
		name    string
		snippet string
		visible int
		clip    int
		clipped string
	}{
		{name: "plain", snippet: "abcdef", visible: 6, clip: 3, clipped: "abc"},
		{name: "tags are free", snippet: "a<b>bc</b>d", visible: 4, clip: 4, clipped: "a<b>bc</b>d"},
		{name: "cut inside b closes it", snippet: "a<b>bcd</b>e", visible: 5, clip: 2, clipped: "a<b>b</b>"},
		{name: "cut right after open tag drops it", snippet: "a<b>bcd</b>", visible: 4, clip: 1, clipped: "a"},
		{name: "entities count one", snippet: "&lt;x&gt;&amp;&#39;&#x27;", visible: 6, clip: 2, clipped: "&lt;x"},
		{name: "lone ampersand and bracket count one", snippet: "a & b < c", visible: 9, clip: 3, clipped: "a &"},
		{name: "multi-byte", snippet: "über", visible: 4, clip: 1, clipped: "ü"},
		{name: "within limit unchanged", snippet: "<b>x</b>", visible: 1, clip: 5, clipped: "<b>x</b>"},
		{name: "zero", snippet: "abc", visible: 3, clip: 0, clipped: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := VisibleLen(tc.snippet); got != tc.visible {
				t.Errorf("VisibleLen(%q) = %d, want %d", tc.snippet, got, tc.visible)
			}
			if got := Clip(tc.snippet, tc.clip); got != tc.clipped {
				t.Errorf("Clip(%q, %d) = %q, want %q", tc.snippet, tc.clip, got, tc.clipped)
			}
		})
	}
}

func FuzzSnippets(f *testing.F) {
	f.Add("the quick <fox> & hound", 4, 9, 100)
	f.Add(strings.Repeat("ab ", 100), 10, 12, 100)
	f.Fuzz(func(t *testing.T, text string, start, end, maxLen int) {
		maxLen = 1 + (maxLen%2000+2000)%2000
		got := Snippets(text, []Span{{start, end}, {end, start + 3}}, maxLen)
		if len(got) > MaxSnippets {
			t.Fatalf("%d snippets", len(got))
		}
		for _, s := range got {
			if n := VisibleLen(s); n > maxLen {
				t.Fatalf("snippet %q: %d visible > %d", s, n, maxLen)
			}
			if c := Clip(s, maxLen); c != s {
				t.Fatalf("Clip changed a snippet within the limit: %q → %q", s, c)
			}
		}
	})
}
