package bleveengine

import (
	"strings"

	index "github.com/blevesearch/bleve_index_api"

	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/search/highlight"
)

// highlight sets the snippets of hits. The matches are found by analysing
// the stored content again with the index analyzers and applying the
// positive full-text nodes (terms of fts clauses not under not, exclusions
// left out) to the tokens, so highlighted text is exactly what matched: a
// phrase only where the phrase occurs, NEAR clauses only inside a window.
func (run *searchRun) highlight(hits []engine.Hit) error {
	var leaves []*qnode
	for _, c := range run.plan.FullText {
		dsl.Walk(c, func(sub dsl.Clause) bool {
			switch sub := sub.(type) {
			case *dsl.Not:
				return false
			case *dsl.FTS:
				leaves = positiveLeaves(run.nodes[sub], leaves)
			}
			return true
		})
	}
	length := run.q.Options.HighlightLength
	if length <= 0 {
		length = dsl.DefaultHighlightLength
	}
	for i := range hits {
		if err := run.checkCtx(); err != nil {
			return err
		}
		content, err := run.content(hits[i].ID)
		if err != nil {
			return err
		}
		snippets := highlight.Snippets(content, run.e.an.spans(content, leaves), length)
		if snippets == nil {
			snippets = []string{}
		}
		hits[i].Highlights = snippets
	}
	return nil
}

// positiveLeaves appends the term-level nodes of q that a match must or may
// contain (not the excluded ones).
func positiveLeaves(q *qnode, acc []*qnode) []*qnode {
	if q == nil {
		return acc
	}
	switch q.kind {
	case qAll, qAny:
		for _, k := range q.kids {
			acc = positiveLeaves(k, acc)
		}
		return acc
	}
	return append(acc, q)
}

// content returns the stored content of a document.
func (run *searchRun) content(id int64) (string, error) {
	return storedContent(run.r, id)
}

// storedContent returns the content of document id as r stores it.
func storedContent(r index.IndexReader, id int64) (string, error) {
	doc, err := r.Document(docID(id))
	if err != nil || doc == nil {
		return "", err
	}
	var content string
	doc.VisitFields(func(f index.Field) {
		if f.Name() == fieldExact {
			content = string(f.Value())
		}
	})
	return content, nil
}

// fieldTokens is a field's analysis of a text: tokens by position and the
// positions of every term.
type fieldTokens struct {
	byPos map[int]token
	pos   positions
	toks  []token
}

func newFieldTokens(toks []token) *fieldTokens {
	ft := &fieldTokens{byPos: make(map[int]token, len(toks)), pos: positions{}, toks: toks}
	for _, t := range toks {
		ft.byPos[t.pos] = t
		ft.pos[t.term] = append(ft.pos[t.term], t.pos)
	}
	return ft
}

// span returns the byte range from the token at position from to the one
// at position to.
func (ft *fieldTokens) span(from, to int) highlight.Span {
	return highlight.Span{Start: ft.byPos[from].start, End: ft.byPos[to].end}
}

// spans returns the byte ranges of content matched by the leaves.
func (an *analyzers) spans(content string, leaves []*qnode) []highlight.Span {
	var stem, exact *fieldTokens
	get := func(field string) *fieldTokens {
		if field == fieldStem {
			if stem == nil {
				stem = newFieldTokens(analyze(an.stem, content))
			}
			return stem
		}
		if exact == nil {
			exact = newFieldTokens(analyze(an.exact, content))
		}
		return exact
	}
	var out []highlight.Span
	for _, q := range leaves {
		ft := get(q.field)
		switch q.kind {
		case qTerm:
			for _, p := range ft.pos[q.terms[0]] {
				out = append(out, ft.span(p, p))
			}
		case qPhrase:
			for _, p := range phraseStarts(q.terms, ft.pos, nil) {
				out = append(out, ft.span(p, p+len(q.terms)-1))
			}
		case qPrefix:
			if len(q.terms) == 0 {
				for _, t := range ft.toks {
					if strings.HasPrefix(t.term, q.prefix) {
						out = append(out, highlight.Span{Start: t.start, End: t.end})
					}
				}
				continue
			}
			for _, p := range phraseStarts(q.terms, ft.pos, nil) {
				last := p + len(q.terms)
				if t, ok := ft.byPos[last]; ok && strings.HasPrefix(t.term, q.prefix) {
					out = append(out, ft.span(p, last))
				}
			}
		case qNear:
			starts := make([][]int, len(q.clauses))
			lens := make([]int, len(q.clauses))
			for i, c := range q.clauses {
				starts[i] = phraseStarts(c, ft.pos, nil)
				lens[i] = len(c)
			}
			nearWindows(starts, lens, q.slop, func(choice []int) bool {
				for i, c := range choice {
					p := starts[i][c]
					out = append(out, ft.span(p, p+lens[i]-1))
				}
				return true
			})
		}
	}
	return out
}
