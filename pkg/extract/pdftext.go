package extract

import (
	"math"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// matrix is a PDF transformation matrix [a b c d e f].
type matrix [6]float64

var identity = matrix{1, 0, 0, 1, 0, 0}

// mul returns m × n (apply m first, then n).
func (m matrix) mul(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func (m matrix) apply(x, y float64) (float64, float64) {
	return x*m[0] + y*m[2] + m[4], x*m[1] + y*m[3] + m[5]
}

func translate(x, y float64) matrix { return matrix{1, 0, 0, 1, x, y} }

type gstate struct {
	ctm                                    matrix
	font                                   *pdfFont
	size, charSpace, wordSpace, hscale, tl float64
	rise                                   float64
}

// operand is a content-stream operand: a token, or an array of tokens.
type operand struct {
	tok token
	arr []token
}

// interp runs the content streams of one page.
type interp struct {
	doc     *pdfDoc
	out     *sink
	gs      gstate
	stack   []gstate
	tm, tlm matrix
	layout  layout
	forms   map[types.IndirectRef]bool // forms being run, against cycles
}

// pageText writes the text of one page.
func (d *pdfDoc) pageText(page, res types.Dict, out *sink) error {
	var data []byte
	contents := d.deref(page["Contents"])
	if arr, ok := contents.(types.Array); ok {
		for _, o := range arr {
			b, err := d.streamData(o)
			if err != nil {
				return err
			}
			data = append(data, b...)
			data = append(data, '\n')
		}
	} else if contents != nil {
		b, err := d.streamData(page["Contents"])
		if err != nil {
			return err
		}
		data = b
	}
	in := &interp{
		doc:    d,
		out:    out,
		gs:     gstate{ctm: identity, hscale: 1, font: defaultFont()},
		forms:  map[types.IndirectRef]bool{},
		layout: layout{out: out},
	}
	if err := in.run(data, res, 0); err != nil {
		return err
	}
	return in.layout.flush()
}

func (in *interp) run(data []byte, res types.Dict, depth int) error {
	lx := &lexer{data: data}
	var ops []operand
	for n := 0; ; n++ {
		if n&4095 == 0 {
			if err := in.doc.ctx.Err(); err != nil {
				return err
			}
		}
		tok := lx.next()
		switch tok.kind {
		case tkEOF:
			return nil
		case tkArrayOpen:
			var arr []token
			for {
				t := lx.next()
				if t.kind == tkArrayClose || t.kind == tkEOF {
					break
				}
				if t.kind == tkOp { // damage: an operator inside an array
					break
				}
				arr = append(arr, t)
			}
			ops = append(ops, operand{arr: arr})
		case tkDictOpen:
			skipDict(lx)
			ops = append(ops, operand{})
		case tkOp:
			if in.doc.ops--; in.doc.ops < 0 {
				return errPDFOperators
			}
			op := string(tok.b)
			if op == "BI" {
				for {
					t := lx.next()
					if t.kind == tkEOF || t.kind == tkOp && string(t.b) == "ID" {
						break
					}
				}
				lx.skipInlineImage()
			} else if err := in.do(op, ops, res, depth); err != nil {
				return err
			}
			ops = ops[:0]
		default:
			ops = append(ops, operand{tok: tok})
			if len(ops) > 64 { // no operator takes that many: garbage
				ops = ops[len(ops)-8:]
			}
		}
	}
}

// skipDict moves past a dictionary whose << was just read.
func skipDict(lx *lexer) {
	depth := 1
	for depth > 0 {
		switch lx.next().kind {
		case tkEOF:
			return
		case tkDictOpen:
			depth++
		case tkDictClose:
			depth--
		}
	}
}

// nums returns the last n operands as numbers, ok false if they are not.
func nums(ops []operand, n int) ([]float64, bool) {
	if len(ops) < n {
		return nil, false
	}
	out := make([]float64, n)
	for i, o := range ops[len(ops)-n:] {
		if o.tok.kind != tkNumber || o.arr != nil {
			return nil, false
		}
		out[i] = o.tok.num
	}
	return out, true
}

func lastString(ops []operand) ([]byte, bool) {
	if len(ops) == 0 || ops[len(ops)-1].tok.kind != tkString {
		return nil, false
	}
	return ops[len(ops)-1].tok.b, true
}

func (in *interp) do(op string, ops []operand, res types.Dict, depth int) error {
	gs := &in.gs
	switch op {
	case "q":
		if len(in.stack) < 256 {
			in.stack = append(in.stack, in.gs)
		}
	case "Q":
		if n := len(in.stack); n > 0 {
			in.gs = in.stack[n-1]
			in.stack = in.stack[:n-1]
		}
	case "cm":
		if v, ok := nums(ops, 6); ok {
			gs.ctm = matrix(v).mul(gs.ctm)
		}
	case "BT":
		in.tm, in.tlm = identity, identity
	case "Tc":
		if v, ok := nums(ops, 1); ok {
			gs.charSpace = v[0]
		}
	case "Tw":
		if v, ok := nums(ops, 1); ok {
			gs.wordSpace = v[0]
		}
	case "Tz":
		if v, ok := nums(ops, 1); ok {
			gs.hscale = v[0] / 100
		}
	case "TL":
		if v, ok := nums(ops, 1); ok {
			gs.tl = v[0]
		}
	case "Ts":
		if v, ok := nums(ops, 1); ok {
			gs.rise = v[0]
		}
	case "Tf":
		if len(ops) >= 2 && ops[len(ops)-2].tok.kind == tkName {
			gs.font = in.doc.font(res, string(ops[len(ops)-2].tok.b))
			gs.size = ops[len(ops)-1].tok.num
		}
	case "Td":
		if v, ok := nums(ops, 2); ok {
			in.tlm = translate(v[0], v[1]).mul(in.tlm)
			in.tm = in.tlm
		}
	case "TD":
		if v, ok := nums(ops, 2); ok {
			gs.tl = -v[1]
			in.tlm = translate(v[0], v[1]).mul(in.tlm)
			in.tm = in.tlm
		}
	case "Tm":
		if v, ok := nums(ops, 6); ok {
			in.tlm = matrix(v)
			in.tm = in.tlm
		}
	case "T*":
		in.nextLine()
	case "Tj":
		if s, ok := lastString(ops); ok {
			return in.show(s)
		}
	case "'":
		in.nextLine()
		if s, ok := lastString(ops); ok {
			return in.show(s)
		}
	case "\"":
		if len(ops) >= 3 {
			if v, ok := nums(ops[:len(ops)-1], 2); ok {
				gs.wordSpace, gs.charSpace = v[0], v[1]
			}
		}
		in.nextLine()
		if s, ok := lastString(ops); ok {
			return in.show(s)
		}
	case "TJ":
		if len(ops) == 0 {
			return nil
		}
		for _, t := range ops[len(ops)-1].arr {
			switch t.kind {
			case tkString:
				if err := in.show(t.b); err != nil {
					return err
				}
			case tkNumber:
				adj := -t.num / 1000 * gs.size
				if gs.font.vertical {
					in.tm = translate(0, adj).mul(in.tm)
				} else {
					in.tm = translate(adj*gs.hscale, 0).mul(in.tm)
				}
			}
		}
	case "Do":
		if len(ops) >= 1 && ops[len(ops)-1].tok.kind == tkName {
			return in.form(string(ops[len(ops)-1].tok.b), res, depth)
		}
	}
	return nil
}

func (in *interp) nextLine() {
	in.tlm = translate(0, -in.gs.tl).mul(in.tlm)
	in.tm = in.tlm
}

// show lays out the glyphs of one string and passes them to the layout.
func (in *interp) show(s []byte) error {
	gs := &in.gs
	var err error
	gs.font.decode(s, func(g glyph) {
		if err != nil {
			return
		}
		m := in.tm.mul(gs.ctm)
		sx, sy := m.apply(0, gs.rise)
		var adv float64
		var ex, ey float64
		if gs.font.vertical {
			adv = g.width*gs.size + gs.charSpace
			if g.space {
				adv += gs.wordSpace
			}
			ex, ey = m.apply(0, gs.rise-g.width*gs.size)
			in.tm = translate(0, -adv).mul(in.tm)
		} else {
			adv = (g.width*gs.size + gs.charSpace) * gs.hscale
			if g.space {
				adv += gs.wordSpace * gs.hscale
			}
			ex, ey = m.apply(g.width*gs.size*gs.hscale, gs.rise)
			in.tm = translate(adv, 0).mul(in.tm)
		}
		dx, dy := ex-sx, ey-sy
		if l := math.Hypot(dx, dy); l > 1e-9 {
			dx, dy = dx/l, dy/l
		} else {
			dx, dy = m[0], m[1]
			if l := math.Hypot(dx, dy); l > 1e-9 {
				dx, dy = dx/l, dy/l
			} else {
				dx, dy = 1, 0
			}
		}
		size := math.Abs(gs.size) * math.Hypot(m[2], m[3])
		if gs.font.scale != 0.001 {
			size *= math.Abs(gs.font.scale) * 1000
		}
		err = in.layout.add(g.text, sx, sy, ex, ey, dx, dy, size)
	})
	return err
}

// form runs a form XObject (other XObjects, images, have no text).
func (in *interp) form(name string, res types.Dict, depth int) error {
	if depth >= pdfMaxDepth {
		return nil
	}
	d := in.doc
	o := d.dict(res["XObject"])[name]
	ref, isRef := o.(types.IndirectRef)
	if isRef && in.forms[ref] {
		return nil // a form that draws itself
	}
	sd, ok := d.deref(o).(types.StreamDict)
	if !ok || d.name(sd.Dict["Subtype"]) != "Form" {
		return nil
	}
	if d.formCalls--; d.formCalls < 0 {
		return errPDFForms
	}
	var data []byte
	if cached, ok := d.forms[ref]; isRef && ok {
		data = cached
	} else {
		b, err := d.streamData(o)
		if err != nil {
			if isFatal(err) {
				return err
			}
			return nil
		}
		data = b
		if isRef {
			d.forms[ref] = data
		}
	}
	formRes := d.dict(sd.Dict["Resources"])
	if formRes == nil {
		formRes = res
	}
	saved, savedStack, tm, tlm := in.gs, len(in.stack), in.tm, in.tlm
	if m := d.array(sd.Dict["Matrix"]); len(m) == 6 {
		var fm matrix
		for i := range fm {
			fm[i] = d.numOr(m[i], identity[i])
		}
		in.gs.ctm = fm.mul(in.gs.ctm)
	}
	if isRef {
		in.forms[ref] = true
		defer delete(in.forms, ref)
	}
	err := in.run(data, formRes, depth+1)
	in.gs, in.stack, in.tm, in.tlm = saved, in.stack[:min(savedStack, len(in.stack))], tm, tlm
	return err
}
