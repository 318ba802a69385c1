package extract

import (
	"bytes"
	"strings"
	"unicode/utf16"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// pdfFont is what text extraction needs of a font: how a string splits into
// codes, the text of each code and each glyph's advance width.
type pdfFont struct {
	composite bool  // Type0: multi-byte codes through an encoding CMap
	encoding  *cmap // Type0 encoding CMap (codespace, CIDs); nil = Identity
	ucs2      bool  // Type0 with a predefined Unicode CMap: codes are UTF-16
	toUnicode *cmap
	simple    [256]string // simple fonts: text of each code from the encoding

	widths       map[uint32]float64 // by code (simple) or CID (composite)
	cidWidths    []widthRange       // composite: ranges "c_first c_last w"
	defaultWidth float64            // glyph units
	scale        float64            // text space units per glyph unit (1/1000, Type3: FontMatrix)
	vertical     bool
}

type widthRange struct {
	lo, hi uint32
	w      float64
}

// glyph is one decoded code.
type glyph struct {
	text  string
	width float64 // advance in text space units for a font size of 1
	space bool    // single-byte code 32, which word spacing applies to
}

// font returns the font resource named name, cached per indirect object.
func (d *pdfDoc) font(res types.Dict, name string) *pdfFont {
	fonts := d.dict(res["Font"])
	if fonts == nil {
		return defaultFont()
	}
	o := fonts[name]
	ref, isRef := o.(types.IndirectRef)
	if isRef {
		if f, ok := d.fonts[ref]; ok {
			return f
		}
	}
	f := d.loadFont(d.dict(o))
	if isRef {
		d.fonts[ref] = f
	}
	return f
}

// defaultFont stands in for a missing font: codes as Latin-1.
func defaultFont() *pdfFont {
	f := &pdfFont{scale: 0.001, defaultWidth: 500}
	for c := 0; c < 256; c++ {
		if r := encodingRune(encNone, byte(c)); r != 0 {
			f.simple[c] = string(r)
		}
	}
	return f
}

func (d *pdfDoc) loadFont(fd types.Dict) *pdfFont {
	if fd == nil {
		return defaultFont()
	}
	f := &pdfFont{scale: 0.001, widths: map[uint32]float64{}}
	if tu := fd["ToUnicode"]; tu != nil {
		if data, err := d.streamData(tu); err == nil && len(data) > 0 {
			f.toUnicode = parseCMap(data)
		}
	}
	subtype := d.name(fd["Subtype"])
	if subtype == "Type0" {
		d.loadComposite(f, fd)
		return f
	}
	if subtype == "Type3" {
		if m := d.array(fd["FontMatrix"]); len(m) >= 4 {
			f.scale = d.numOr(m[0], 0.001)
			if f.scale == 0 {
				f.scale = 0.001
			}
		}
	}
	d.loadSimpleEncoding(f, fd)
	first := int(d.numOr(fd["FirstChar"], 0))
	desc := d.dict(fd["FontDescriptor"])
	f.defaultWidth = d.numOr(desc["MissingWidth"], 0)
	ws := d.array(fd["Widths"])
	for i, w := range ws {
		if c := first + i; c >= 0 && c < 256 {
			f.widths[uint32(c)] = d.numOr(w, 0)
		}
	}
	if len(ws) == 0 {
		d.standardWidths(f, fd)
	}
	if f.defaultWidth == 0 {
		f.defaultWidth = averageWidth(f.widths)
	}
	return f
}

// standardWidths stands in for the Widths array the standard 14 fonts may
// omit: Courier is fixed-pitch, the others get a typical average width.
// Gaps between glyphs come out right either way, since advances use the
// same widths; only where a string ends is approximate.
func (d *pdfDoc) standardWidths(f *pdfFont, fd types.Dict) {
	base := strings.ToLower(d.name(fd["BaseFont"]))
	switch {
	case strings.Contains(base, "courier") || strings.Contains(base, "mono"):
		f.defaultWidth = 600
	case strings.Contains(base, "times"):
		f.defaultWidth = 450
	default:
		f.defaultWidth = 520
	}
}

func averageWidth(w map[uint32]float64) float64 {
	var sum float64
	var n int
	for _, v := range w {
		if v > 0 {
			sum += v
			n++
		}
	}
	if n == 0 {
		return 500
	}
	return sum / float64(n)
}

// loadSimpleEncoding fills f.simple from the font's Encoding (a name, or a
// dictionary with BaseEncoding and Differences) or, lacking one, from the
// embedded Type 1 font program's built-in encoding.
func (d *pdfDoc) loadSimpleEncoding(f *pdfFont, fd types.Dict) {
	base := encStandard
	desc := d.dict(fd["FontDescriptor"])
	flags := int(d.numOr(desc["Flags"], 0))
	symbolic := flags&4 != 0 && flags&32 == 0
	subtype := d.name(fd["Subtype"])
	if subtype == "TrueType" || subtype == "Type3" {
		base = encWinAnsi
	}
	var diffs types.Array
	builtin := false
	switch e := d.deref(fd["Encoding"]).(type) {
	case types.Name:
		base = namedEncoding(string(e), base)
	case types.Dict:
		if n := d.name(e["BaseEncoding"]); n != "" {
			base = namedEncoding(n, base)
		} else {
			builtin = true
		}
		diffs = d.array(e["Differences"])
	default:
		builtin = true
		if symbolic {
			base = encNone
		}
	}
	for c := 0; c < 256; c++ {
		if r := encodingRune(base, byte(c)); r != 0 {
			f.simple[c] = string(r)
		}
	}
	if builtin && subtype == "Type1" {
		if names := d.type1Encoding(desc); names != nil {
			for c, n := range names {
				if t := glyphText(n); t != "" {
					f.simple[c] = t
				}
			}
		}
	}
	code := 0
	for _, o := range diffs {
		switch v := d.deref(o).(type) {
		case types.Integer:
			code = int(v)
		case types.Float:
			code = int(v)
		case types.Name:
			if code >= 0 && code < 256 {
				if t := glyphText(string(v)); t != "" {
					f.simple[code] = t
				} else if f.toUnicode == nil {
					f.simple[code] = "" // an unknown glyph is not the base character
				}
			}
			code++
		}
	}
}

func namedEncoding(name string, def baseEncoding) baseEncoding {
	switch name {
	case "WinAnsiEncoding":
		return encWinAnsi
	case "MacRomanEncoding":
		return encMacRoman
	case "StandardEncoding":
		return encStandard
	}
	return def
}

// type1Encoding reads the built-in encoding of an embedded Type 1 font
// program ("dup <code> /<name> put" in its clear-text part). TeX's fonts
// rely on it.
func (d *pdfDoc) type1Encoding(desc types.Dict) map[int]string {
	ff := desc["FontFile"]
	if ff == nil {
		return nil
	}
	data, err := d.streamData(ff)
	if err != nil || len(data) == 0 {
		return nil
	}
	if n := int(d.numOr(d.dict(ff)["Length1"], 0)); n > 0 && n < len(data) {
		data = data[:n]
	}
	i := bytes.Index(data, []byte("/Encoding"))
	if i < 0 {
		return nil
	}
	data = data[i:]
	if end := bytes.Index(data, []byte("readonly def")); end > 0 {
		data = data[:end]
	} else if end := bytes.Index(data, []byte("eexec")); end > 0 {
		data = data[:end]
	}
	if bytes.HasPrefix(data, []byte("/Encoding StandardEncoding")) {
		return nil
	}
	names := map[int]string{}
	lx := &lexer{data: data}
	var prev []token
	for {
		tok := lx.next()
		if tok.kind == tkEOF {
			break
		}
		if tok.kind == tkOp && string(tok.b) == "put" && len(prev) >= 3 {
			dup, code, name := prev[len(prev)-3], prev[len(prev)-2], prev[len(prev)-1]
			if dup.kind == tkOp && string(dup.b) == "dup" && code.kind == tkNumber && name.kind == tkName {
				if c := int(code.num); c >= 0 && c < 256 {
					names[c] = string(name.b)
				}
			}
		}
		prev = append(prev, tok)
		if len(prev) > 3 {
			prev = prev[1:]
		}
	}
	if len(names) == 0 {
		return nil
	}
	return names
}

func (d *pdfDoc) loadComposite(f *pdfFont, fd types.Dict) {
	f.composite = true
	f.defaultWidth = 1000
	switch e := d.deref(fd["Encoding"]).(type) {
	case types.Name:
		name := string(e)
		f.vertical = strings.HasSuffix(name, "-V")
		if strings.HasPrefix(name, "Uni") && (strings.Contains(name, "UCS2") || strings.Contains(name, "UTF16")) {
			f.ucs2 = true
		}
		if !strings.HasPrefix(name, "Identity") && f.toUnicode != nil && len(f.toUnicode.spaces) > 0 {
			// A predefined CMap we do not ship: the ToUnicode CMap's
			// codespace is the best guide to code lengths.
			f.encoding = &cmap{spaces: f.toUnicode.spaces}
		}
	case types.StreamDict:
		if data, err := d.streamData(fd["Encoding"]); err == nil {
			f.encoding = parseCMap(data)
		}
		f.vertical = d.numOr(e.Dict["WMode"], 0) == 1
	}
	desc := d.dict(arrayAt(d.array(fd["DescendantFonts"]), 0))
	if desc == nil {
		return
	}
	f.defaultWidth = d.numOr(desc["DW"], 1000)
	w := d.array(desc["W"])
	for i := 0; i < len(w); {
		first, ok := d.num(w[i])
		if !ok {
			i++
			continue
		}
		if i+1 < len(w) {
			if arr := d.array(w[i+1]); arr != nil {
				for k, v := range arr {
					if k >= cmapMaxExpand {
						break
					}
					f.widths[uint32(first)+uint32(k)] = d.numOr(v, f.defaultWidth)
				}
				i += 2
				continue
			}
		}
		if i+2 < len(w) {
			last, ok1 := d.num(w[i+1])
			width, ok2 := d.num(w[i+2])
			if ok1 && ok2 && last >= first {
				f.cidWidths = append(f.cidWidths, widthRange{lo: uint32(first), hi: uint32(last), w: width})
			}
		}
		i += 3
	}
}

// arrayAt returns a[i] or nil.
func arrayAt(a types.Array, i int) types.Object {
	if i < 0 || i >= len(a) {
		return nil
	}
	return a[i]
}

// decode splits s into glyphs.
func (f *pdfFont) decode(s []byte, fn func(glyph)) {
	for i := 0; i < len(s); {
		n := 1
		if f.composite {
			n = f.encoding.codeLen(s[i:], 2)
		}
		code := codeValue(s[i : i+n])
		g := glyph{space: n == 1 && code == 32}
		g.text = f.text(code, s[i:i+n])
		g.width = f.width(code) * f.scale
		i += n
		fn(g)
	}
}

func (f *pdfFont) text(code uint32, raw []byte) string {
	if f.toUnicode != nil {
		if s, ok := f.toUnicode.text(code); ok {
			return expandLigature(s)
		}
	}
	if f.composite {
		if f.ucs2 {
			units := make([]uint16, 0, 2)
			for i := 0; i+1 < len(raw); i += 2 {
				units = append(units, uint16(raw[i])<<8|uint16(raw[i+1]))
			}
			return string(utf16.Decode(units))
		}
		return ""
	}
	if code < 256 {
		return expandLigature(f.simple[code])
	}
	return ""
}

func (f *pdfFont) width(code uint32) float64 {
	key := code
	if f.composite && f.encoding != nil {
		if cid, ok := f.encoding.cidOf(code); ok {
			key = cid
		}
	}
	if w, ok := f.widths[key]; ok {
		return w
	}
	for _, r := range f.cidWidths {
		if key >= r.lo && key <= r.hi {
			return r.w
		}
	}
	return f.defaultWidth
}
