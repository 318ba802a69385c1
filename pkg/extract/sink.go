package extract

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// errTextFull is returned by sink writes once the text cap is reached; the
// producers stop and Extract turns it into Result.Truncated.
var errTextFull = errors.New("extract: text limit reached")

// sink collects extracted text. It keeps the text valid UTF-8 without control
// characters (other than tab, newline and form feed), avoids runs of blank
// separators, enforces the size cap and checks ctx every so often so that
// long extractions notice cancellation.
type sink struct {
	ctx       context.Context
	max       int
	b         strings.Builder
	truncated bool
	sep       int
	writes    int
}

func newSink(ctx context.Context, max int) *sink {
	return &sink{ctx: ctx, max: max}
}

// WriteString appends s after cleaning it.
func (s *sink) WriteString(str string) error {
	if s.truncated {
		return errTextFull
	}
	s.writes++
	if s.writes&1023 == 0 {
		if err := s.ctx.Err(); err != nil {
			return err
		}
	}
	for i := 0; i < len(str); {
		r, size := utf8.DecodeRuneInString(str[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			r = unicode.ReplacementChar
		case r == '\r':
			r = '\n'
		case r == '\n' || r == '\t' || r == '\f':
		case r == 0xA0 || r == 0x2007 || r == 0x202F:
			r = ' ' // non-breaking spaces separate words too
		case r == 0xAD || r == 0xFEFF || r == 0x200B:
			continue // soft hyphen, BOM, zero-width space: invisible
		case unicode.IsControl(r):
			continue
		}
		if err := s.put(r); err != nil {
			return err
		}
	}
	return nil
}

// Separators are held back until the next visible rune, so the text never
// ends with or doubles them: sep is the strongest separator seen since the
// last visible rune.
const (
	sepNone = iota
	sepSpace
	sepLine
	sepPara
	sepPage
)

func (s *sink) put(r rune) error {
	switch r {
	case ' ', '\t':
		s.sep = max(s.sep, sepSpace)
		return nil
	case '\n':
		if s.sep == sepLine || s.sep == sepPara {
			s.sep = sepPara
		} else {
			s.sep = max(s.sep, sepLine)
		}
		return nil
	case '\f':
		s.sep = sepPage
		return nil
	}
	if s.sep != sepNone && s.b.Len() > 0 {
		sep := [...]string{"", " ", "\n", "\n\n", "\f"}[s.sep]
		if s.b.Len()+len(sep) > s.max {
			s.truncated = true
			return errTextFull
		}
		s.b.WriteString(sep)
	}
	s.sep = sepNone
	n := utf8.RuneLen(r)
	if s.b.Len()+n > s.max {
		s.truncated = true
		return errTextFull
	}
	s.b.WriteRune(r)
	return nil
}

// Space writes a word separator.
func (s *sink) Space() error { return s.put(' ') }

// Newline ends a line (several in a row still make one line break).
func (s *sink) Newline() error {
	s.sep = max(s.sep, sepLine)
	return nil
}

// Paragraph ends a paragraph (an empty line).
func (s *sink) Paragraph() error {
	s.sep = max(s.sep, sepPara)
	return nil
}

// PageBreak separates pages.
func (s *sink) PageBreak() error { return s.put('\f') }

func (s *sink) result() (string, bool) {
	return s.b.String(), s.truncated
}

// remaining is how many more bytes of text the sink takes.
func (s *sink) remaining() int { return max(0, s.max-s.b.Len()) }

// tokenSlack is what a markup token may hold beyond the text the sink still
// takes: room for a tag with its attributes.
const tokenSlack = 64 << 10

// runLimiter bounds the bytes that may follow a '<' before the next one.
// encoding/xml holds a whole token (a run of text, a tag) in memory, and
// again as a string once it is text, so a small compressed part with one
// huge run of text would cost that much memory before the text cap
// applied. Past limit() bytes the rest of the run is dropped: text that
// far past the cap would have been cut anyway, and a tag cut short is
// malformed markup. limit is asked afresh for every read, as the sink
// fills.
type runLimiter struct {
	r     io.Reader
	limit func() int
	run   int // bytes since the last '<'
}

func (l *runLimiter) Read(p []byte) (int, error) {
	for {
		n, err := l.r.Read(p)
		if n == 0 {
			return 0, err
		}
		lim, w := l.limit(), 0
		for rest := p[:n]; len(rest) > 0; {
			i := bytes.IndexByte(rest, '<')
			run := rest
			if i >= 0 {
				run = rest[:i]
			}
			keep := min(len(run), max(0, lim-l.run))
			w += copy(p[w:], run[:keep])
			l.run += len(run)
			if i < 0 {
				break
			}
			p[w] = '<'
			w++
			l.run = 0
			rest = rest[i+1:]
		}
		if w > 0 || err != nil {
			return w, err
		}
		// Everything read was dropped: read on.
	}
}

// boundedTokens wraps a markup source so that no token outgrows what the
// sink can still take (plus tokenSlack).
func boundedTokens(r io.Reader, out *sink) io.Reader {
	return &runLimiter{r: r, limit: func() int { return out.remaining() + tokenSlack }}
}
