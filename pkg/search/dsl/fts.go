package dsl

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// FTSNode is a node of a parsed full-text query: *Word, *Phrase, *Prefix,
// *Near, *AnyOf, *AllOf or *Exclude. String renders the node in query
// syntax; ParseFTS of that text yields an equal tree.
//
// Text in the nodes is kept as typed: case and punctuation are left to the
// engine's analyzer (which lowercases, and may split a word such as
// "e-mail" into several tokens).
type FTSNode interface {
	String() string
	ftsNode()
}

// Word is a bare word: the engine analyzes and stems it (English) and
// matches it anywhere in the content. Text contains no whitespace, no '"'
// and no '*'.
type Word struct {
	Text string
}

// Phrase is a quoted phrase: its words' exact (lowercased, unstemmed)
// tokens, adjacent and in order. Words holds at least one word, each free
// of whitespace and '"'; inside quotes '*', '-' and OR are ordinary
// characters.
type Phrase struct {
	Words []string
}

// Prefix matches any token starting with Prefix (exact, lowercased by the
// engine). Prefix is non-empty and contains no whitespace, '"' or '*'.
type Prefix struct {
	Prefix string
}

// Near matches when every clause occurs, in any order, with at most
// Distance other tokens between the first and the last (Lucene span_near
// with slop Distance and in_order false). Each clause is a single token or
// an intact phrase (matched like Phrase). Clauses holds at least two
// entries; Distance is within 0..MaxNearDistance.
type Near struct {
	Clauses  []Phrase
	Distance int
}

// AnyOf matches when at least one node matches ("a OR b OR c"). Nodes holds
// at least two nodes, each a *Word, *Phrase, *Prefix or *Near.
type AnyOf struct {
	Nodes []FTSNode
}

// AllOf matches when every node matches (implicit AND) and no excluded node
// matches. Nodes is in query order and holds at least two entries, at least
// one of which is not an *Exclude; the others are *Word, *Phrase, *Prefix,
// *Near or *AnyOf.
type AllOf struct {
	Nodes []FTSNode
}

// Exclude ("-word", "-\"a phrase\"") removes documents matching Node, a
// *Word, *Phrase, *Prefix or *Near. It only occurs directly inside an
// *AllOf.
type Exclude struct {
	Node FTSNode
}

func (*Word) ftsNode()    {}
func (*Phrase) ftsNode()  {}
func (*Prefix) ftsNode()  {}
func (*Near) ftsNode()    {}
func (*AnyOf) ftsNode()   {}
func (*AllOf) ftsNode()   {}
func (*Exclude) ftsNode() {}

func (n *Word) String() string   { return n.Text }
func (n *Phrase) String() string { return `"` + strings.Join(n.Words, " ") + `"` }
func (n *Prefix) String() string { return n.Prefix + "*" }

// Text returns the phrase's words joined by single spaces.
func (n *Phrase) Text() string { return strings.Join(n.Words, " ") }

// String renders *N"w1 w2" when every clause is a single word and
// *NP"p1 words" "p2 words" otherwise, with the distance after N or NP when it
// is not DefaultNearDistance.
func (n *Near) String() string {
	single := true
	for _, c := range n.Clauses {
		if len(c.Words) != 1 {
			single = false
			break
		}
	}
	var b strings.Builder
	b.WriteString("*N")
	if !single {
		b.WriteByte('P')
	}
	if n.Distance != DefaultNearDistance {
		b.WriteString(strconv.Itoa(n.Distance))
	}
	if single {
		b.WriteByte('"')
		for i, c := range n.Clauses {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(c.Words[0])
		}
		b.WriteByte('"')
		return b.String()
	}
	for i := range n.Clauses {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(n.Clauses[i].String())
	}
	return b.String()
}

func (n *AnyOf) String() string { return joinNodes(n.Nodes, " OR ") }
func (n *AllOf) String() string { return joinNodes(n.Nodes, " ") }
func (n *Exclude) String() string {
	return "-" + n.Node.String()
}

func joinNodes(nodes []FTSNode, sep string) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = n.String()
	}
	return strings.Join(parts, sep)
}

// ParseFTS parses a full-text query string (the query of an fts clause).
// The grammar, precedence and limits are described in the package
// documentation. Errors are *Error values whose Detail starts with
// "Invalid fts query" and, where it applies, gives the 1-based character
// position of the offending token: "Invalid fts query at position 5: ...".
func ParseFTS(s string) (FTSNode, error) {
	if len(s) > MaxFTSQueryBytes {
		return nil, errorf("Invalid fts query: longer than %d bytes", MaxFTSQueryBytes)
	}
	if !utf8.ValidString(s) {
		return nil, errorf("Invalid fts query: not valid UTF-8")
	}
	p := ftsParser{src: s}
	toks, err := p.lex()
	if err != nil {
		return nil, err
	}
	return p.build(toks)
}

// ftsToken is a lexical item: OR, or a term (possibly excluded).
type ftsToken struct {
	or      bool
	exclude bool
	node    FTSNode // the term; nil for OR
	pos     int     // byte offset of the token's first character
}

type ftsParser struct {
	src   string
	pos   int // byte offset
	terms int // words seen so far, bounded by MaxFTSTerms
}

// errAt builds an error naming the 1-based character position of byte
// offset off.
func (p *ftsParser) errAt(off int, format string, args ...any) error {
	pos := utf8.RuneCountInString(p.src[:off]) + 1
	return errorf("Invalid fts query at position %d: %s", pos, fmt.Sprintf(format, args...))
}

func (p *ftsParser) countTerms(n int) error {
	p.terms += n
	if p.terms > MaxFTSTerms {
		return errorf("Invalid fts query: more than %d terms", MaxFTSTerms)
	}
	return nil
}

// spaceAt reports whether a whitespace character starts at byte offset i,
// and its width.
func (p *ftsParser) spaceAt(i int) (bool, int) {
	r, w := utf8.DecodeRuneInString(p.src[i:])
	return unicode.IsSpace(r), w
}

func (p *ftsParser) skipSpace() {
	for p.pos < len(p.src) {
		sp, w := p.spaceAt(p.pos)
		if !sp {
			return
		}
		p.pos += w
	}
}

func (p *ftsParser) lex() ([]ftsToken, error) {
	var toks []ftsToken
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			return toks, nil
		}
		start := p.pos
		exclude := false
		if p.src[p.pos] == '-' && p.pos+1 < len(p.src) {
			if sp, _ := p.spaceAt(p.pos + 1); !sp {
				exclude = true
				p.pos++
			}
		}
		tok, err := p.term(start, exclude)
		if err != nil {
			return nil, err
		}
		toks = append(toks, tok)
	}
}

// term lexes one term (or OR) at p.pos; start is where the token began
// (before any '-').
func (p *ftsParser) term(start int, exclude bool) (ftsToken, error) {
	tok := ftsToken{exclude: exclude, pos: start}
	var err error
	switch p.src[p.pos] {
	case '"':
		tok.node, err = p.phrase()
	case '*':
		tok.node, err = p.near()
	default:
		tok.node, tok.or, err = p.word(exclude)
	}
	return tok, err
}

// quoted reads a quoted group at p.pos (which holds '"') and returns its
// words.
func (p *ftsParser) quoted() ([]string, error) {
	open := p.pos
	end := strings.IndexByte(p.src[open+1:], '"')
	if end < 0 {
		return nil, p.errAt(open, "unterminated quote")
	}
	inner := p.src[open+1 : open+1+end]
	p.pos = open + end + 2
	words := strings.Fields(inner)
	if len(words) == 0 {
		return nil, p.errAt(open, "empty phrase")
	}
	if err := p.countTerms(len(words)); err != nil {
		return nil, err
	}
	return words, nil
}

func (p *ftsParser) phrase() (FTSNode, error) {
	words, err := p.quoted()
	if err != nil {
		return nil, err
	}
	return &Phrase{Words: words}, nil
}

// word reads a word, a prefix or the OR operator. A word ends at whitespace
// or '"'.
func (p *ftsParser) word(exclude bool) (node FTSNode, isOR bool, err error) {
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] != '"' {
		sp, w := p.spaceAt(p.pos)
		if sp {
			break
		}
		p.pos += w
	}
	w := p.src[start:p.pos]
	if w == "OR" && !exclude {
		return nil, true, nil
	}
	if star := strings.IndexByte(w, '*'); star >= 0 {
		if star != len(w)-1 || star == 0 {
			return nil, false, p.errAt(start+star, "unexpected *: use it at the end of a word for a prefix (pre*) or as *N\"w1 w2\" for NEAR")
		}
		if err := p.countTerms(1); err != nil {
			return nil, false, err
		}
		return &Prefix{Prefix: w[:star]}, false, nil
	}
	if err := p.countTerms(1); err != nil {
		return nil, false, err
	}
	return &Word{Text: w}, false, nil
}

// near reads *N"…", *N<n>"…", *NP"…" "…" or *NP<n>"…" "…" at p.pos.
func (p *ftsParser) near() (FTSNode, error) {
	start := p.pos
	p.pos++ // '*'
	if p.pos >= len(p.src) || p.src[p.pos] != 'N' {
		return nil, p.errAt(start, "unexpected *: use it at the end of a word for a prefix (pre*) or as *N\"w1 w2\" for NEAR")
	}
	p.pos++
	phrases := p.pos < len(p.src) && p.src[p.pos] == 'P'
	if phrases {
		p.pos++
	}
	op := p.src[start:p.pos]
	digits := p.pos
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	distance := DefaultNearDistance
	if p.pos > digits {
		n, err := strconv.Atoi(p.src[digits:p.pos])
		if err != nil || n > MaxNearDistance {
			return nil, p.errAt(digits, "NEAR distance must be between 0 and %d", MaxNearDistance)
		}
		distance = n
	}
	if p.pos >= len(p.src) || p.src[p.pos] != '"' {
		return nil, p.errAt(start, "%s must be followed directly by a quoted group, as in %s\"w1 w2\"", op, op)
	}
	near := &Near{Distance: distance}
	if !phrases {
		words, err := p.quoted()
		if err != nil {
			return nil, err
		}
		if len(words) < 2 {
			return nil, p.errAt(start, "*N needs at least two words")
		}
		for _, w := range words {
			near.Clauses = append(near.Clauses, Phrase{Words: []string{w}})
		}
		return near, nil
	}
	for {
		words, err := p.quoted()
		if err != nil {
			return nil, err
		}
		near.Clauses = append(near.Clauses, Phrase{Words: words})
		// Every quoted group that follows (separated by whitespace only)
		// belongs to this *NP.
		save := p.pos
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			p.pos = save
			break
		}
	}
	if len(near.Clauses) < 2 {
		return nil, p.errAt(start, "*NP needs at least two quoted phrases")
	}
	return near, nil
}

// build applies the grammar to the token list: OR binds tighter than the
// implicit AND.
func (p *ftsParser) build(toks []ftsToken) (FTSNode, error) {
	if len(toks) == 0 {
		return nil, errorf("Invalid fts query: the query is empty")
	}
	var nodes []FTSNode
	included := 0
	for i := 0; i < len(toks); {
		t := toks[i]
		if t.or {
			return nil, p.errAt(t.pos, "OR must stand between two terms")
		}
		if t.exclude {
			if i+1 < len(toks) && toks[i+1].or {
				return nil, p.errAt(t.pos, "an excluded term cannot be combined with OR")
			}
			nodes = append(nodes, &Exclude{Node: t.node})
			i++
			continue
		}
		alts := []FTSNode{t.node}
		i++
		for i < len(toks) && toks[i].or {
			if i+1 >= len(toks) || toks[i+1].or {
				return nil, p.errAt(toks[i].pos, "OR must stand between two terms")
			}
			if next := toks[i+1]; next.exclude {
				return nil, p.errAt(next.pos, "an excluded term cannot be combined with OR")
			}
			alts = append(alts, toks[i+1].node)
			i += 2
		}
		included++
		if len(alts) == 1 {
			nodes = append(nodes, alts[0])
		} else {
			nodes = append(nodes, &AnyOf{Nodes: alts})
		}
	}
	if included == 0 {
		return nil, errorf("Invalid fts query: at least one term must not be excluded")
	}
	if len(nodes) == 1 {
		return nodes[0], nil
	}
	return &AllOf{Nodes: nodes}, nil
}
