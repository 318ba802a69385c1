package opensearchengine

import (
	"testing"

	"github.com/docrepo/docrepo/pkg/search/highlight"
)

func TestSnippetCleansFragmentsToMaxLen(t *testing.T) {
	for _, c := range []struct {
		frag string
		max  int
		want string
	}{
		{"a <b>budget</b> &amp; more", 100, "a <b>budget</b> &amp; more"},
		// OpenSearch's html encoder writes / and ' as &#x2F; and &#x27;.
		{"&lt;&#x2F;h3&gt; it&#x27;s &quot;<b>x</b>&quot;", 100, "&lt;/h3&gt; it&#39;s &#34;<b>x</b>&#34;"},
		{"line\none\ttab", 100, "line one tab"},
		{"  <b>a</b><b>b</b> c  ", 100, "<b>ab</b> c"},
		{"<b>more</b> <b>budgets</b>", 100, "<b>more</b> <b>budgets</b>"},
		{"abc <b>defgh</b> ij", 6, "abc <b>de</b>"},
		{"abc <b>defgh</b> ij", 4, "abc "},
		{"&amp;&amp;&amp;", 2, "&amp;&amp;"},
		{"", 10, ""},
		{"   ", 10, ""},
	} {
		got := snippet(c.frag, c.max)
		if got != c.want {
			t.Errorf("snippet(%q, %d) = %q, want %q", c.frag, c.max, got, c.want)
		}
		if n := highlight.VisibleLen(got); n > c.max {
			t.Errorf("snippet(%q, %d) has %d visible characters", c.frag, c.max, n)
		}
	}
}
