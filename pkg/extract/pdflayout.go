package extract

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Page layout. Glyphs arrive in content-stream order with their positions.
// Consecutive glyphs on one baseline form a fragment (a line, or a table
// cell's line); a gap wider than wordGap separates words inside it. At the
// end of the page the fragments are put in reading order by recursive XY
// cuts (split the page at the widest empty band, horizontal or vertical, and
// recurse), which orders columns and tables the way pdftotext does instead
// of the order the writer happened to draw them in.

// Thresholds, as fractions of the font size (the order of magnitude of
// pdftotext's): a gap wider than wordGap between two glyphs on one line
// separates words, one wider than fragmentGap ends the fragment; a baseline
// shift larger than lineShift starts a new fragment; moving back by more
// than backJump too; a glyph repeated within dupDistance of the previous one
// is a fake-bold overprint and dropped.
const (
	wordGap     = 0.1
	fragmentGap = 1.5
	lineShift   = 0.6
	backJump    = 0.2
	dupDistance = 0.1
	rowGap      = 0.5

	// maxReorder: pages with more fragments keep content order (XY cuts
	// are quadratic in the worst case).
	maxReorder = 4000
)

type fragment struct {
	text           strings.Builder
	x0, y0, x1, y1 float64 // bounding box (horizontal text)
	base, size     float64
	horizontal     bool
}

// layout collects the fragments of one page.
type layout struct {
	out            *sink
	frags          []*fragment
	cur            *fragment
	has            bool
	sx, sy, ex, ey float64 // start and end of the previous glyph
	dx, dy, size   float64 // its baseline direction and font size
	last           string
	bytes          int
}

func (l *layout) add(text string, sx, sy, ex, ey, dx, dy, size float64) error {
	if size < 1e-3 {
		size = 1e-3
	}
	if strings.TrimSpace(text) == "" && text != "" {
		// Like pdftotext, space characters are not trusted: writers also
		// use them with no width or move back over them. Word breaks come
		// from the geometry of the visible glyphs alone.
		return nil
	}
	newFrag, space := !l.has, false
	if l.has {
		small, big := min(size, l.size), max(size, l.size)
		if text != "" && text == l.last && math.Abs(sx-l.sx) < dupDistance*small && math.Abs(sy-l.sy) < dupDistance*small {
			return nil
		}
		vx, vy := sx-l.ex, sy-l.ey
		along := vx*l.dx + vy*l.dy
		perp := vy*l.dx - vx*l.dy
		switch {
		case dx*l.dx+dy*l.dy < 0.95 || math.Abs(perp) > lineShift*big:
			newFrag = true
		case along > fragmentGap*big || along < -backJump*big:
			newFrag = true
		case along > wordGap*small:
			space = true
		}
	}
	l.has = true
	l.sx, l.sy, l.ex, l.ey, l.dx, l.dy, l.size = sx, sy, ex, ey, dx, dy, size
	l.last = text
	if text == "" {
		return nil
	}
	if newFrag || l.cur == nil {
		l.cur = &fragment{
			x0: min(sx, ex), x1: max(sx, ex), base: sy, size: size,
			horizontal: math.Abs(dy) < 0.05 && dx > 0,
		}
		l.cur.y0, l.cur.y1 = sy-0.25*size, sy+0.75*size
		l.frags = append(l.frags, l.cur)
	} else if space {
		l.cur.text.WriteByte(' ')
	}
	f := l.cur
	f.x0, f.x1 = min(f.x0, sx, ex), max(f.x1, sx, ex)
	f.y0, f.y1 = min(f.y0, sy-0.25*size), max(f.y1, sy+0.75*size)
	f.text.WriteString(text)
	l.bytes += len(text)
	if l.bytes > l.out.max {
		// The page alone exceeds the text cap: write it now.
		return l.flush()
	}
	return nil
}

// flush writes the page's fragments in reading order and resets.
func (l *layout) flush() error {
	frags := l.frags
	l.frags, l.cur, l.has, l.bytes = nil, nil, false, 0
	var flow, other []*fragment
	for _, f := range frags {
		if f.horizontal {
			flow = append(flow, f)
		} else {
			other = append(other, f)
		}
	}
	if len(flow) <= maxReorder {
		flow = xyCut(flow)
	}
	ordered := append(flow, other...)
	for i, f := range ordered {
		text := f.text.String()
		if i > 0 {
			prev := ordered[i-1]
			var err error
			switch {
			case f.horizontal && prev.horizontal && math.Abs(f.base-prev.base) < 0.5*min(f.size, prev.size) && f.x0 >= prev.x1-0.5*f.size:
				err = l.out.Space()
			case hyphenated(prev.text.String(), text):
				// Joined to the previous line's word, as pdftotext does.
			default:
				err = l.out.Newline()
			}
			if err != nil {
				return err
			}
		}
		if i+1 < len(ordered) && hyphenated(text, ordered[i+1].text.String()) {
			text = strings.TrimSuffix(text, "-")
		}
		if err := l.out.WriteString(text); err != nil {
			return err
		}
	}
	return l.out.Newline()
}

// hyphenated reports a word broken across lines: a line ending in a letter
// and a hyphen, the next starting with a lowercase letter.
func hyphenated(line, next string) bool {
	before, ok := strings.CutSuffix(line, "-")
	if !ok {
		return false
	}
	last, _ := utf8.DecodeLastRuneInString(before)
	first, _ := utf8.DecodeRuneInString(next)
	return unicode.IsLetter(last) && unicode.IsLower(first)
}

// xyCut orders fragments for reading: it splits them at the widest empty
// band across the whole group, horizontal (top part first) or vertical
// (left part first), and recurses; a group with no empty band keeps content
// order.
func xyCut(frags []*fragment) []*fragment {
	if len(frags) <= 1 {
		return frags
	}
	hGap, hAt := widestGap(frags, func(f *fragment) (float64, float64) { return -f.y1, -f.y0 })
	vGap, vAt := widestGap(frags, func(f *fragment) (float64, float64) { return f.x0, f.x1 })
	var first, second []*fragment
	switch {
	case hGap <= 0 && vGap <= 0:
		return frags
	case hGap >= vGap || hGap >= rowGap*medianSize(frags):
		// A clear horizontal band wins even over a wider vertical one:
		// table rows read across, and a title stays above its columns.
		// Between the lines of a paragraph the band is narrower than
		// rowGap, so two columns of text still split into columns.
		for _, f := range frags {
			if -f.y0 <= hAt {
				first = append(first, f)
			} else {
				second = append(second, f)
			}
		}
	default:
		for _, f := range frags {
			if f.x1 <= vAt {
				first = append(first, f)
			} else {
				second = append(second, f)
			}
		}
	}
	if len(first) == 0 || len(second) == 0 {
		return frags
	}
	return append(xyCut(first), xyCut(second)...)
}

// widestGap projects the fragments on one axis (span returns each one's
// interval, smaller values read first) and returns the widest gap between
// the merged intervals and the coordinate where it starts.
func widestGap(frags []*fragment, span func(*fragment) (float64, float64)) (gap, at float64) {
	type iv struct{ lo, hi float64 }
	ivs := make([]iv, len(frags))
	for i, f := range frags {
		ivs[i].lo, ivs[i].hi = span(f)
	}
	slices.SortFunc(ivs, func(a, b iv) int { return cmp.Compare(a.lo, b.lo) })
	end := ivs[0].hi
	for _, v := range ivs[1:] {
		if v.lo > end && v.lo-end > gap {
			gap, at = v.lo-end, end
		}
		end = max(end, v.hi)
	}
	return gap, at
}

func medianSize(frags []*fragment) float64 {
	sizes := make([]float64, len(frags))
	for i, f := range frags {
		sizes[i] = f.size
	}
	slices.Sort(sizes)
	return sizes[len(sizes)/2]
}
