package highlight

import (
	"html"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxSnippets is the most snippets of one result.
const MaxSnippets = 3

// maxSpans bounds the matches considered in one document, so a word that
// occurs a hundred thousand times does not make highlighting slow; the
// first maxSpans matches are used.
const maxSpans = 10000

// Span is a match: the half-open byte range [Start, End) of the text.
type Span struct {
	Start, End int
}

// Snippets returns up to MaxSnippets snippets of text, in document order,
// each of at most maxLen visible characters, with the spans wrapped in
// <b>…</b> and all other text HTML-escaped. Spans may be unsorted and
// overlap; ranges outside text or not on character boundaries are adjusted.
// It returns nil when there is no span or maxLen < 1.
func Snippets(text string, spans []Span, maxLen int) []string {
	if maxLen < 1 {
		return nil
	}
	sp := normalize(text, spans)
	if len(sp) == 0 {
		return nil
	}
	// Rune offsets of every span boundary, counted in one pass.
	rs := make([]int, len(sp)) // rune offset of sp[i].Start
	re := make([]int, len(sp)) // rune offset of sp[i].End
	pos, runes := 0, 0
	for i, s := range sp {
		runes += utf8.RuneCountInString(text[pos:s.Start])
		rs[i] = runes
		runes += utf8.RuneCountInString(text[s.Start:s.End])
		re[i] = runes
		pos = s.End
	}

	// Candidate windows: from each span, as many following spans as fit.
	type window struct{ first, last int }
	cands := make([]window, len(sp))
	j := 0
	for i := range sp {
		if j < i {
			j = i
		}
		for j+1 < len(sp) && re[j+1]-rs[i] <= maxLen {
			j++
		}
		cands[i] = window{i, j}
	}
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		wa, wb := cands[order[a]], cands[order[b]]
		return wa.last-wa.first > wb.last-wb.first
	})
	var chosen []window
	for _, k := range order {
		w := cands[k]
		overlaps := false
		for _, c := range chosen {
			if w.first <= c.last && c.first <= w.last {
				overlaps = true
				break
			}
		}
		if !overlaps {
			chosen = append(chosen, w)
			if len(chosen) == MaxSnippets {
				break
			}
		}
	}
	sort.Slice(chosen, func(a, b int) bool { return chosen[a].first < chosen[b].first })

	out := make([]string, 0, len(chosen))
	leftBound := 0
	for n, w := range chosen {
		rightBound := len(text)
		if n+1 < len(chosen) {
			rightBound = sp[chosen[n+1].first].Start
		}
		coreStart, coreEnd := sp[w.first].Start, sp[w.last].End
		coreLen := re[w.last] - rs[w.first]
		if coreLen > maxLen {
			// A single match longer than the limit: cut it.
			coreEnd = advance(text, coreStart, maxLen, len(text))
			coreLen = maxLen
		}
		start, end := widen(text, coreStart, coreEnd, maxLen-coreLen, leftBound, rightBound)
		out = append(out, render(text, start, end, sp[w.first:w.last+1]))
		leftBound = end
	}
	return out
}

// normalize clamps spans to text and to character boundaries, drops empty
// ones, sorts and merges overlapping or touching ones.
func normalize(text string, spans []Span) []Span {
	sp := make([]Span, 0, len(spans))
	for _, s := range spans {
		if s.Start < 0 {
			s.Start = 0
		}
		if s.End > len(text) {
			s.End = len(text)
		}
		for s.Start > 0 && s.Start < len(text) && !utf8.RuneStart(text[s.Start]) {
			s.Start--
		}
		for s.End < len(text) && s.End > 0 && !utf8.RuneStart(text[s.End]) {
			s.End++
		}
		if s.Start < s.End {
			sp = append(sp, s)
		}
	}
	sort.Slice(sp, func(i, j int) bool {
		if sp[i].Start != sp[j].Start {
			return sp[i].Start < sp[j].Start
		}
		return sp[i].End < sp[j].End
	})
	merged := sp[:0]
	for _, s := range sp {
		if n := len(merged); n > 0 && s.Start <= merged[n-1].End {
			if s.End > merged[n-1].End {
				merged[n-1].End = s.End
			}
			continue
		}
		merged = append(merged, s)
		if len(merged) == maxSpans {
			break
		}
	}
	return merged
}

// advance returns the byte offset n runes after from, at most limit.
func advance(text string, from, n, limit int) int {
	for n > 0 && from < limit {
		_, w := utf8.DecodeRuneInString(text[from:])
		from += w
		n--
	}
	return from
}

// retreat returns the byte offset n runes before from, at least limit.
func retreat(text string, from, n, limit int) int {
	for n > 0 && from > limit {
		_, w := utf8.DecodeLastRuneInString(text[:from])
		from -= w
		n--
	}
	return from
}

// widen adds up to extra runes of context around [coreStart, coreEnd),
// half before and half after, within [leftBound, rightBound], giving
// context one side cannot use to the other, then cuts partial words at the
// edges and trims spaces.
func widen(text string, coreStart, coreEnd, extra, leftBound, rightBound int) (int, int) {
	if leftBound > coreStart {
		leftBound = coreStart
	}
	if rightBound < coreEnd {
		rightBound = coreEnd
	}
	before := extra / 2
	start := retreat(text, coreStart, before, leftBound)
	unusedBefore := before - utf8.RuneCountInString(text[start:coreStart])
	after := extra - before + unusedBefore
	end := advance(text, coreEnd, after, rightBound)
	if unusedAfter := after - utf8.RuneCountInString(text[coreEnd:end]); unusedAfter > 0 {
		start = retreat(text, start, unusedAfter, leftBound)
	}
	// Do not start or end in the middle of a word of the context.
	if start < coreStart && start > 0 && isWordByte(text, start-1) && isWordByte(text, start) {
		if i := strings.IndexFunc(text[start:coreStart], unicode.IsSpace); i >= 0 {
			start += i
		}
	}
	if end > coreEnd && end < len(text) && isWordByte(text, end-1) && isWordByte(text, end) {
		if i := strings.LastIndexFunc(text[coreEnd:end], unicode.IsSpace); i >= 0 {
			end = coreEnd + i
		}
	}
	for start < coreStart {
		r, w := utf8.DecodeRuneInString(text[start:])
		if !unicode.IsSpace(r) {
			break
		}
		start += w
	}
	for end > coreEnd {
		r, w := utf8.DecodeLastRuneInString(text[:end])
		if !unicode.IsSpace(r) {
			break
		}
		end -= w
	}
	return start, end
}

// isWordByte reports whether the character containing byte i is a letter
// or digit.
func isWordByte(text string, i int) bool {
	for i > 0 && !utf8.RuneStart(text[i]) {
		i--
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// render escapes text[start:end] and wraps the parts of spans inside it in
// <b>…</b>.
func render(text string, start, end int, spans []Span) string {
	var b strings.Builder
	b.Grow(end - start + 7*len(spans) + 16)
	pos := start
	for _, s := range spans {
		if s.Start >= end {
			break
		}
		if s.End <= pos {
			continue
		}
		ss, se := s.Start, s.End
		if ss < pos {
			ss = pos
		}
		if se > end {
			se = end
		}
		writeEscaped(&b, text[pos:ss])
		b.WriteString("<b>")
		writeEscaped(&b, text[ss:se])
		b.WriteString("</b>")
		pos = se
	}
	if pos < end {
		writeEscaped(&b, text[pos:end])
	}
	return b.String()
}

// writeEscaped writes s HTML-escaped, control characters as spaces and
// invalid UTF-8 as U+FFFD, so every input character is one visible
// character.
func writeEscaped(b *strings.Builder, s string) {
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r' || unicode.IsControl(r):
			b.WriteByte(' ')
		case r == '<' || r == '>' || r == '&' || r == '\'' || r == '"':
			b.WriteString(html.EscapeString(string(r)))
		default:
			b.WriteRune(r)
		}
	}
}

// VisibleLen returns the number of visible characters of an HTML snippet:
// tags count zero, a character entity ("&lt;", "&#39;") one, every other
// character one.
func VisibleLen(snippet string) int {
	n := 0
	for i := 0; i < len(snippet); {
		w, visible := item(snippet, i)
		i += w
		if visible {
			n++
		}
	}
	return n
}

// Clip cuts an HTML snippet (text escaped, matches in <b>…</b>) to at most
// maxLen visible characters, never inside a tag or an entity, and closes a
// <b> left open by the cut. A snippet within the limit is returned
// unchanged.
func Clip(snippet string, maxLen int) string {
	if maxLen < 0 {
		maxLen = 0
	}
	n := 0
	open := false
	for i := 0; i < len(snippet); {
		w, visible := item(snippet, i)
		if visible {
			if n == maxLen {
				cut := snippet[:i]
				if open {
					if strings.HasSuffix(cut, "<b>") {
						return strings.TrimSuffix(cut, "<b>")
					}
					cut += "</b>"
				}
				return cut
			}
			n++
		} else {
			switch snippet[i : i+w] {
			case "<b>":
				open = true
			case "</b>":
				open = false
			}
		}
		i += w
	}
	return snippet
}

// item returns the width of the snippet item starting at byte i (a tag, an
// entity or one character) and whether it is visible.
func item(s string, i int) (int, bool) {
	switch s[i] {
	case '<':
		if j := strings.IndexByte(s[i:], '>'); j > 0 && isTag(s[i:i+j+1]) {
			return j + 1, false
		}
	case '&':
		if j := strings.IndexByte(s[i:], ';'); j > 1 && j <= 10 && isEntity(s[i+1:i+j]) {
			return j + 1, true
		}
	}
	_, w := utf8.DecodeRuneInString(s[i:])
	return w, true
}

// isTag reports whether t ("<...>") is a tag: a name of letters, optionally
// preceded by '/'.
func isTag(t string) bool {
	name := strings.TrimPrefix(t[1:len(t)-1], "/")
	if name == "" {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// isEntity reports whether e (between '&' and ';') is a named or numeric
// character reference.
func isEntity(e string) bool {
	if e[0] == '#' {
		digits := e[1:]
		hex := false
		if len(digits) > 0 && (digits[0] == 'x' || digits[0] == 'X') {
			digits, hex = digits[1:], true
		}
		if digits == "" {
			return false
		}
		for _, r := range digits {
			if !(r >= '0' && r <= '9' || hex && (r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F')) {
				return false
			}
		}
		return true
	}
	for _, r := range e {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
