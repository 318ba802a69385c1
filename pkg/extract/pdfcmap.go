package extract

import (
	"unicode/utf16"
)

// cmap is a parsed CMap stream (PDF 32000-1 §9.7.5, §9.10.3): codespace
// ranges, which split strings into codes, plus either ToUnicode mappings
// (bfchar/bfrange) or CID mappings (cidchar/cidrange).
type cmap struct {
	spaces   []codespace
	uni      map[uint32]string
	uniRange []uniRange
	cid      map[uint32]uint32
	cidRange []cidRange
}

type codespace struct {
	lo, hi []byte
}

type uniRange struct {
	lo, hi uint32
	dst    []uint16 // UTF-16 of lo's text; the last unit grows with the code
}

type cidRange struct {
	lo, hi, cid uint32
}

// cmapMaxExpand bounds how many entries an array-form bfrange may add.
const cmapMaxExpand = 1 << 16

func codeValue(b []byte) uint32 {
	var v uint32
	for _, c := range b[:min(len(b), 4)] {
		v = v<<8 | uint32(c)
	}
	return v
}

// utf16Text decodes UTF-16BE bytes (a ToUnicode destination).
func utf16Text(b []byte) string {
	units := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		units = append(units, uint16(b[i])<<8|uint16(b[i+1]))
	}
	if len(b)%2 == 1 { // sloppy single-byte destination
		units = append(units, uint16(b[len(b)-1]))
	}
	return string(utf16.Decode(units))
}

// parseCMap reads the parts of a CMap that text extraction uses. It is
// tolerant: anything it does not understand is skipped.
func parseCMap(data []byte) *cmap {
	m := &cmap{uni: map[uint32]string{}, cid: map[uint32]uint32{}}
	lx := &lexer{data: data}
	var operands []token
	for {
		tok := lx.next()
		switch tok.kind {
		case tkEOF:
			return m
		case tkOp:
			switch string(tok.b) {
			case "begincodespacerange":
				m.readCodespace(lx)
			case "beginbfchar":
				m.readBFChar(lx)
			case "beginbfrange":
				m.readBFRange(lx)
			case "begincidchar":
				m.readCIDChar(lx)
			case "begincidrange":
				m.readCIDRange(lx)
			}
			operands = operands[:0]
		default:
			operands = append(operands, tok)
			if len(operands) > 16 {
				operands = operands[:0]
			}
		}
	}
}

// section reads tokens up to the given end operator.
func section(lx *lexer, end string) []token {
	var toks []token
	for {
		tok := lx.next()
		if tok.kind == tkEOF || tok.kind == tkOp && string(tok.b) == end {
			return toks
		}
		toks = append(toks, tok)
	}
}

func (m *cmap) readCodespace(lx *lexer) {
	toks := section(lx, "endcodespacerange")
	for i := 0; i+1 < len(toks); i += 2 {
		lo, hi := toks[i], toks[i+1]
		if lo.kind == tkString && hi.kind == tkString && len(lo.b) == len(hi.b) && len(lo.b) > 0 && len(lo.b) <= 4 {
			m.spaces = append(m.spaces, codespace{lo: lo.b, hi: hi.b})
		}
	}
}

func (m *cmap) readBFChar(lx *lexer) {
	toks := section(lx, "endbfchar")
	for i := 0; i+1 < len(toks); i += 2 {
		src, dst := toks[i], toks[i+1]
		if src.kind != tkString {
			continue
		}
		switch dst.kind {
		case tkString:
			m.uni[codeValue(src.b)] = utf16Text(dst.b)
		case tkName: // a glyph name instead of a code (allowed, rare)
			m.uni[codeValue(src.b)] = glyphText(string(dst.b))
		}
	}
}

func (m *cmap) readBFRange(lx *lexer) {
	for {
		lo := lx.next()
		if lo.kind == tkEOF || lo.kind == tkOp {
			return // endbfrange or damage
		}
		hi := lx.next()
		dst := lx.next()
		if lo.kind != tkString || hi.kind != tkString {
			continue
		}
		l, h := codeValue(lo.b), codeValue(hi.b)
		if h < l {
			continue
		}
		switch dst.kind {
		case tkString:
			units := make([]uint16, 0, len(dst.b)/2)
			for i := 0; i+1 < len(dst.b); i += 2 {
				units = append(units, uint16(dst.b[i])<<8|uint16(dst.b[i+1]))
			}
			if len(units) > 0 {
				m.uniRange = append(m.uniRange, uniRange{lo: l, hi: h, dst: units})
			}
		case tkArrayOpen:
			code := l
			for {
				t := lx.next()
				if t.kind == tkArrayClose || t.kind == tkEOF || t.kind == tkOp {
					break
				}
				if t.kind == tkString && code <= h && code-l < cmapMaxExpand {
					m.uni[code] = utf16Text(t.b)
				}
				code++
			}
		}
	}
}

func (m *cmap) readCIDChar(lx *lexer) {
	toks := section(lx, "endcidchar")
	for i := 0; i+1 < len(toks); i += 2 {
		if toks[i].kind == tkString && toks[i+1].kind == tkNumber {
			m.cid[codeValue(toks[i].b)] = uint32(toks[i+1].num)
		}
	}
}

func (m *cmap) readCIDRange(lx *lexer) {
	toks := section(lx, "endcidrange")
	for i := 0; i+2 < len(toks); i += 3 {
		lo, hi, c := toks[i], toks[i+1], toks[i+2]
		if lo.kind == tkString && hi.kind == tkString && c.kind == tkNumber {
			m.cidRange = append(m.cidRange, cidRange{lo: codeValue(lo.b), hi: codeValue(hi.b), cid: uint32(c.num)})
		}
	}
}

// text returns the Unicode text mapped to code, ok false when unmapped.
func (m *cmap) text(code uint32) (string, bool) {
	if s, ok := m.uni[code]; ok {
		return s, true
	}
	for _, r := range m.uniRange {
		if code >= r.lo && code <= r.hi {
			units := append([]uint16(nil), r.dst...)
			units[len(units)-1] += uint16(code - r.lo)
			s := string(utf16.Decode(units))
			m.uni[code] = s // later lookups of this code are a map hit
			return s, true
		}
	}
	return "", false
}

// cidOf maps a code to a CID, ok false when unmapped.
func (m *cmap) cidOf(code uint32) (uint32, bool) {
	if c, ok := m.cid[code]; ok {
		return c, true
	}
	for _, r := range m.cidRange {
		if code >= r.lo && code <= r.hi {
			return r.cid + code - r.lo, true
		}
	}
	return 0, false
}

// codeLen returns the length of the code at the start of s according to
// the codespace ranges (§9.7.6.2); without ranges, def bytes.
func (m *cmap) codeLen(s []byte, def int) int {
	if m == nil || len(m.spaces) == 0 {
		return min(def, len(s))
	}
	shortest := 4
	for n := 1; n <= 4 && n <= len(s); n++ {
		for _, sp := range m.spaces {
			if len(sp.lo) != n {
				continue
			}
			shortest = min(shortest, n)
			in := true
			for i := 0; i < n; i++ {
				if s[i] < sp.lo[i] || s[i] > sp.hi[i] {
					in = false
					break
				}
			}
			if in {
				return n
			}
		}
	}
	for _, sp := range m.spaces {
		shortest = min(shortest, len(sp.lo))
	}
	return max(1, min(shortest, len(s)))
}
