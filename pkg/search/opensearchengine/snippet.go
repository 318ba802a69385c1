package opensearchengine

import (
	"html"
	"strings"
	"unicode"

	"github.com/docrepo/docrepo/pkg/search/highlight"
)

// snippet turns one fragment of OpenSearch's highlighter (html encoder:
// text escaped, matches in <b>…</b>) into a snippet as the embedded engine
// writes them: the text re-escaped the same way (&lt; &gt; &amp; &#39;
// &#34;, where OpenSearch also writes &#x2F; for '/'), control characters
// as spaces, surrounding spaces trimmed, adjacent marks merged, and at most
// max visible characters (highlight.Clip, the shared rule). It returns ""
// for an empty fragment.
func snippet(frag string, max int) string {
	var b strings.Builder
	open := false
	for len(frag) > 0 {
		switch {
		case strings.HasPrefix(frag, preTag):
			if !open {
				if strings.HasSuffix(b.String(), postTag) {
					// <b>a</b><b>b</b> → <b>ab</b>
					s := strings.TrimSuffix(b.String(), postTag)
					b.Reset()
					b.WriteString(s)
				} else {
					b.WriteString(preTag)
				}
				open = true
			}
			frag = frag[len(preTag):]
			continue
		case strings.HasPrefix(frag, postTag):
			if open {
				b.WriteString(postTag)
				open = false
			}
			frag = frag[len(postTag):]
			continue
		}
		end := len(frag)
		if i := strings.IndexByte(frag, '<'); i > 0 {
			end = i
		} else if i == 0 {
			end = 1 // a '<' that starts no tag (cannot happen with the html encoder)
		}
		writeEscaped(&b, html.UnescapeString(frag[:end]))
		frag = frag[end:]
	}
	if open {
		b.WriteString(postTag)
	}
	return highlight.Clip(trimSnippet(b.String()), max)
}

// writeEscaped writes s HTML-escaped, control characters as spaces.
func writeEscaped(b *strings.Builder, s string) {
	for _, r := range s {
		switch {
		case unicode.IsControl(r):
			b.WriteByte(' ')
		case r == '<' || r == '>' || r == '&' || r == '\'' || r == '"':
			b.WriteString(html.EscapeString(string(r)))
		default:
			b.WriteRune(r)
		}
	}
}

// trimSnippet trims spaces at both ends (outside the tags).
func trimSnippet(s string) string {
	for {
		t := strings.TrimSpace(s)
		if strings.HasPrefix(t, preTag+" ") {
			t = preTag + strings.TrimLeft(t[len(preTag):], " ")
		}
		if strings.HasSuffix(t, " "+postTag) {
			t = strings.TrimRight(t[:len(t)-len(postTag)], " ") + postTag
		}
		if t == s {
			return s
		}
		s = t
	}
}
