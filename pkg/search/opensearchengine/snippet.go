package opensearchengine

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// limitSnippet cuts an HTML-escaped fragment with <b>…</b> tags to at most
// max visible characters (a character entity such as &amp; is one visible
// character, tags none), preferring to end at a space, and closes an open
// <b>. The fragment is trimmed of surrounding whitespace.
func limitSnippet(s string, max int) string {
	s = strings.TrimSpace(s)
	visible, cut, lastSpace, open, openAtSpace := 0, -1, -1, false, false
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], preTag):
			open = true
			i += len(preTag)
			continue
		case strings.HasPrefix(s[i:], postTag):
			open = false
			i += len(postTag)
			continue
		}
		if visible == max {
			cut = i
			break
		}
		n := 1
		if s[i] == '&' {
			if end := strings.IndexByte(s[i:], ';'); end > 0 && end <= 10 {
				n = end + 1
			}
		} else {
			r, w := utf8.DecodeRuneInString(s[i:])
			n = w
			if unicode.IsSpace(r) {
				lastSpace, openAtSpace = i, open
			}
		}
		visible++
		i += n
	}
	if cut < 0 {
		return s
	}
	if lastSpace > 0 {
		cut, open = lastSpace, openAtSpace
	}
	out := strings.TrimRightFunc(s[:cut], unicode.IsSpace)
	if open {
		out += postTag
	}
	return out
}
