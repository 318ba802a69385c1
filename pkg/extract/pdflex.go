package extract

import (
	"bytes"
	"strconv"
)

// A small lexer for PDF content streams and CMaps (PDF 32000-1 §7.2, §7.3).
// It never fails: damaged input yields odd tokens that the interpreter
// ignores, and every loop advances, so it always reaches the end.

type tokKind uint8

const (
	tkEOF tokKind = iota
	tkNumber
	tkString // literal or hex string; bytes in tok.b
	tkName   // without the slash, #xx escapes decoded
	tkOp     // operator or other bare keyword (true, false, null, ...)
	tkArrayOpen
	tkArrayClose
	tkDictOpen
	tkDictClose
	tkBraceOpen
	tkBraceClose
)

type token struct {
	kind tokKind
	num  float64
	b    []byte
}

type lexer struct {
	data []byte
	pos  int
}

func isPDFSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == 0
}

func isPDFDelim(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

func (l *lexer) skipSpace() {
	for l.pos < len(l.data) {
		c := l.data[l.pos]
		if isPDFSpace(c) {
			l.pos++
			continue
		}
		if c == '%' {
			for l.pos < len(l.data) && l.data[l.pos] != '\n' && l.data[l.pos] != '\r' {
				l.pos++
			}
			continue
		}
		return
	}
}

func (l *lexer) next() token {
	l.skipSpace()
	if l.pos >= len(l.data) {
		return token{kind: tkEOF}
	}
	c := l.data[l.pos]
	switch c {
	case '[':
		l.pos++
		return token{kind: tkArrayOpen}
	case ']':
		l.pos++
		return token{kind: tkArrayClose}
	case '{':
		l.pos++
		return token{kind: tkBraceOpen}
	case '}':
		l.pos++
		return token{kind: tkBraceClose}
	case '(':
		l.pos++
		return token{kind: tkString, b: l.literal()}
	case '<':
		if l.pos+1 < len(l.data) && l.data[l.pos+1] == '<' {
			l.pos += 2
			return token{kind: tkDictOpen}
		}
		l.pos++
		return token{kind: tkString, b: l.hex()}
	case '>':
		l.pos++
		if l.pos < len(l.data) && l.data[l.pos] == '>' {
			l.pos++
		}
		return token{kind: tkDictClose}
	case ')':
		l.pos++
		return l.next()
	case '/':
		l.pos++
		return token{kind: tkName, b: l.name()}
	}
	start := l.pos
	for l.pos < len(l.data) && !isPDFSpace(l.data[l.pos]) && !isPDFDelim(l.data[l.pos]) {
		l.pos++
	}
	word := l.data[start:l.pos]
	if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' {
		if f, ok := parseNumber(word); ok {
			return token{kind: tkNumber, num: f}
		}
	}
	return token{kind: tkOp, b: word}
}

// parseNumber accepts PDF numbers, including the sloppy forms writers
// produce ("--5", "5.", "1.2.3" is rejected).
func parseNumber(b []byte) (float64, bool) {
	s := string(b)
	for len(s) > 1 && (s[0] == '-' || s[0] == '+') && (s[1] == '-' || s[1] == '+') {
		s = s[1:]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

func (l *lexer) literal() []byte {
	var out []byte
	depth := 1
	for l.pos < len(l.data) {
		c := l.data[l.pos]
		l.pos++
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return out
			}
		case '\r':
			// An end of line in a string is a newline, whatever its form.
			if l.pos < len(l.data) && l.data[l.pos] == '\n' {
				l.pos++
			}
			c = '\n'
		case '\\':
			if l.pos >= len(l.data) {
				return out
			}
			e := l.data[l.pos]
			l.pos++
			switch e {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r':
				if l.pos < len(l.data) && l.data[l.pos] == '\n' {
					l.pos++
				}
				continue
			case '\n':
				continue
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for k := 0; k < 2 && l.pos < len(l.data) && l.data[l.pos] >= '0' && l.data[l.pos] <= '7'; k++ {
						v = v*8 + int(l.data[l.pos]-'0')
						l.pos++
					}
					c = byte(v)
				} else {
					c = e
				}
			}
		}
		out = append(out, c)
	}
	return out
}

func (l *lexer) hex() []byte {
	var out []byte
	var cur byte
	half := false
	for l.pos < len(l.data) {
		c := l.data[l.pos]
		l.pos++
		if c == '>' {
			break
		}
		v, ok := unhex(c)
		if !ok {
			continue
		}
		if half {
			out = append(out, cur<<4|v)
		} else {
			cur = v
		}
		half = !half
	}
	if half {
		out = append(out, cur<<4)
	}
	return out
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func (l *lexer) name() []byte {
	start := l.pos
	for l.pos < len(l.data) && !isPDFSpace(l.data[l.pos]) && !isPDFDelim(l.data[l.pos]) {
		l.pos++
	}
	raw := l.data[start:l.pos]
	if bytes.IndexByte(raw, '#') < 0 {
		return raw
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] == '#' && i+2 < len(raw) {
			h, ok1 := unhex(raw[i+1])
			lo, ok2 := unhex(raw[i+2])
			if ok1 && ok2 {
				out = append(out, h<<4|lo)
				i += 2
				continue
			}
		}
		out = append(out, raw[i])
	}
	return out
}

// skipInlineImage moves past the data of an inline image, which starts
// right after the ID operator and ends with EI (§8.9.7). The data is binary,
// so EI counts only when whitespace precedes it and whitespace, a delimiter
// or the end follows it.
func (l *lexer) skipInlineImage() {
	if l.pos < len(l.data) && isPDFSpace(l.data[l.pos]) {
		l.pos++
	}
	for i := l.pos; i+1 < len(l.data); i++ {
		if l.data[i] == 'E' && l.data[i+1] == 'I' && i > l.pos && isPDFSpace(l.data[i-1]) &&
			(i+2 == len(l.data) || isPDFSpace(l.data[i+2]) || isPDFDelim(l.data[i+2])) {
			l.pos = i + 2
			return
		}
	}
	l.pos = len(l.data)
}
