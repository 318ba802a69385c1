package bleveengine

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docrepo/docrepo/pkg/search/dsl"
)

// evalFn evaluates a where clause on one document: whether it matches and
// the score it contributes (the sum of the BM25 scores of the fts clauses it
// matched; metadata clauses and not contribute 0).
type evalFn func(slot int32, r *record) (bool, float64)

// ftsLeaf is the result of one fts clause: the score of every matching
// document by slot (NaN: no match), and the matching slots.
type ftsLeaf struct {
	scores []float64
	slots  []int32
}

// leafPool recycles the score arrays of fts results (one float64 per
// document: worth reusing at 100k documents).
var leafPool sync.Pool

// leafOnDemand lets fts skip the score array of a clause that is the
// whole search (topCollector keeps its page); the benchmarks turn it off
// to compare.
var leafOnDemand = true

// newLeaf returns an empty result for a table of n slots.
func newLeaf(n int) *ftsLeaf {
	if l, ok := leafPool.Get().(*ftsLeaf); ok && len(l.scores) >= n {
		l.scores = l.scores[:n]
		return l
	}
	l := &ftsLeaf{scores: make([]float64, n)}
	for i := range l.scores {
		l.scores[i] = math.NaN()
	}
	return l
}

// release resets the leaf (only the entries it set) and returns it to the
// pool.
func (l *ftsLeaf) release() {
	if cap(l.scores) == 0 {
		// A leaf without scores (no match, or topCollector's).
		return
	}
	for _, s := range l.slots {
		l.scores[s] = math.NaN()
	}
	l.slots = l.slots[:0]
	l.scores = l.scores[:cap(l.scores)]
	leafPool.Put(l)
}

func (l *ftsLeaf) score(slot int32) (bool, float64) {
	if int(slot) >= len(l.scores) {
		return false, 0
	}
	s := l.scores[slot]
	if math.IsNaN(s) {
		return false, 0
	}
	return true, s
}

// compiler turns where clauses into evalFns; leaves holds the result of
// every fts clause.
type compiler struct {
	leaves map[*dsl.FTS]*ftsLeaf
}

func (c *compiler) compileAll(cs []dsl.Clause) (evalFn, error) {
	fns := make([]evalFn, 0, len(cs))
	for _, sub := range cs {
		f, err := c.compile(sub)
		if err != nil {
			return nil, err
		}
		fns = append(fns, f)
	}
	switch len(fns) {
	case 0:
		return func(int32, *record) (bool, float64) { return true, 0 }, nil
	case 1:
		return fns[0], nil
	}
	return func(slot int32, r *record) (bool, float64) {
		sum := 0.0
		for _, f := range fns {
			ok, s := f(slot, r)
			if !ok {
				return false, 0
			}
			sum += s
		}
		return true, sum
	}, nil
}

func (c *compiler) compile(cl dsl.Clause) (evalFn, error) {
	switch cl := cl.(type) {
	case *dsl.And:
		return c.compileAll(cl.Clauses)
	case *dsl.Or:
		fns := make([]evalFn, 0, len(cl.Clauses))
		for _, sub := range cl.Clauses {
			f, err := c.compile(sub)
			if err != nil {
				return nil, err
			}
			fns = append(fns, f)
		}
		return func(slot int32, r *record) (bool, float64) {
			any, sum := false, 0.0
			for _, f := range fns {
				if ok, s := f(slot, r); ok {
					any = true
					sum += s
				}
			}
			return any, sum
		}, nil
	case *dsl.Not:
		f, err := c.compile(cl.Clause)
		if err != nil {
			return nil, err
		}
		return func(slot int32, r *record) (bool, float64) {
			ok, _ := f(slot, r)
			return !ok, 0
		}, nil
	case *dsl.FTS:
		leaf := c.leaves[cl]
		if leaf == nil {
			return nil, fmt.Errorf("bleveengine: fts clause %q was not executed", cl.Query)
		}
		return func(slot int32, _ *record) (bool, float64) { return leaf.score(slot) }, nil
	case *dsl.Vector:
		return nil, fmt.Errorf("bleveengine: a vector clause must be a top-level conjunct")
	case *dsl.Compare:
		p, err := comparePred(cl)
		return boolFn(p), err
	case *dsl.In:
		p, err := inPred(cl)
		return boolFn(p), err
	case *dsl.TextMatch:
		p, err := textPred(cl)
		return boolFn(p), err
	}
	return nil, fmt.Errorf("bleveengine: unknown clause %T", cl)
}

type pred func(r *record) bool

func boolFn(p pred) evalFn {
	if p == nil {
		return nil
	}
	return func(_ int32, r *record) (bool, float64) { return p(r), 0 }
}

func not(p pred) pred { return func(r *record) bool { return !p(r) } }

// Field accessors.

func stringGetter(name string) (func(r *record) (string, bool), bool) {
	i, ok := stringFields[name]
	if !ok {
		return nil, false
	}
	return func(r *record) (string, bool) { return r.str[i], r.has(i) }, true
}

func timeGetter(name string) (func(r *record) (time.Time, bool), bool) {
	switch name {
	case "date":
		return func(r *record) (time.Time, bool) { return r.date, r.hasDate }, true
	case "entry_date":
		return func(r *record) (time.Time, bool) { return r.entryDate, r.hasEntryDate }, true
	}
	return nil, false
}

func boolGetter(name string) (func(r *record) bool, bool) {
	switch name {
	case "privileged":
		return func(r *record) bool { return r.privileged }, true
	case "islocked":
		return func(r *record) bool { return r.locked }, true
	}
	return nil, false
}

// intsGetter returns the values of an integer field: the id, or the folder
// ids of filesbelongto (any of which may match).
func intsGetter(name string) (func(r *record, buf *[1]int64) []int64, bool) {
	switch name {
	case dsl.FieldID:
		return func(r *record, buf *[1]int64) []int64 { buf[0] = r.id; return buf[:] }, true
	case "filesbelongto":
		return func(r *record, _ *[1]int64) []int64 { return r.folders }, true
	}
	return nil, false
}

func unsupported(op dsl.Op, f dsl.Field) error {
	return fmt.Errorf("bleveengine: operator %s on field %s (%s) is not supported", op, f.Name, f.Type)
}

// cmpOK reports whether a comparison result c (a <=> b, document value
// first) satisfies op.
func cmpOK(op dsl.Op, c int) bool {
	switch op {
	case dsl.OpGt:
		return c > 0
	case dsl.OpGte:
		return c >= 0
	case dsl.OpLt:
		return c < 0
	case dsl.OpLte:
		return c <= 0
	}
	return false
}

// timeEq reports whether t equals v: within the day [v.Time, v.End) for a
// whole-day value, the same instant otherwise.
func timeEq(t time.Time, v dsl.Value) bool {
	if v.Day {
		return !t.Before(v.Time) && t.Before(v.End)
	}
	return t.Equal(v.Time)
}

func comparePred(c *dsl.Compare) (pred, error) {
	op, v := c.Op, c.Value
	negate := op == dsl.OpNe
	if negate {
		op = dsl.OpEq
	}
	var p pred
	switch c.Field.Type {
	case dsl.TypeString:
		get, ok := stringGetter(c.Field.Name)
		if !ok {
			return nil, unsupported(c.Op, c.Field)
		}
		if op == dsl.OpEq {
			p = func(r *record) bool { s, ok := get(r); return ok && s == v.Str }
		} else {
			p = func(r *record) bool { s, ok := get(r); return ok && cmpOK(op, strings.Compare(s, v.Str)) }
		}
	case dsl.TypeInt:
		get, ok := intsGetter(c.Field.Name)
		if !ok {
			return nil, unsupported(c.Op, c.Field)
		}
		p = func(r *record) bool {
			var buf [1]int64
			for _, x := range get(r, &buf) {
				if op == dsl.OpEq && x == v.Int || op != dsl.OpEq && cmpOK(op, cmpInt(x, v.Int)) {
					return true
				}
			}
			return false
		}
	case dsl.TypeDateTime:
		get, ok := timeGetter(c.Field.Name)
		if !ok {
			return nil, unsupported(c.Op, c.Field)
		}
		if op == dsl.OpEq {
			p = func(r *record) bool { t, ok := get(r); return ok && timeEq(t, v) }
		} else {
			p = func(r *record) bool { t, ok := get(r); return ok && cmpOK(op, t.Compare(v.Time)) }
		}
	case dsl.TypeBool:
		get, ok := boolGetter(c.Field.Name)
		if !ok || op != dsl.OpEq {
			return nil, unsupported(c.Op, c.Field)
		}
		p = func(r *record) bool { return get(r) == v.Bool }
	default:
		return nil, unsupported(c.Op, c.Field)
	}
	if negate {
		return not(p), nil
	}
	return p, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func inPred(c *dsl.In) (pred, error) {
	var p pred
	switch c.Field.Type {
	case dsl.TypeString:
		get, ok := stringGetter(c.Field.Name)
		if !ok {
			return nil, unsupported(c.Op, c.Field)
		}
		set := make(map[string]struct{}, len(c.Values))
		for _, v := range c.Values {
			set[v.Str] = struct{}{}
		}
		p = func(r *record) bool {
			s, ok := get(r)
			if !ok {
				return false
			}
			_, in := set[s]
			return in
		}
	case dsl.TypeInt:
		get, ok := intsGetter(c.Field.Name)
		if !ok {
			return nil, unsupported(c.Op, c.Field)
		}
		set := make(map[int64]struct{}, len(c.Values))
		for _, v := range c.Values {
			set[v.Int] = struct{}{}
		}
		p = func(r *record) bool {
			var buf [1]int64
			for _, x := range get(r, &buf) {
				if _, in := set[x]; in {
					return true
				}
			}
			return false
		}
	case dsl.TypeDateTime:
		get, ok := timeGetter(c.Field.Name)
		if !ok {
			return nil, unsupported(c.Op, c.Field)
		}
		vals := slices.Clone(c.Values)
		p = func(r *record) bool {
			t, ok := get(r)
			if !ok {
				return false
			}
			for _, v := range vals {
				if timeEq(t, v) {
					return true
				}
			}
			return false
		}
	case dsl.TypeBool:
		get, ok := boolGetter(c.Field.Name)
		if !ok {
			return nil, unsupported(c.Op, c.Field)
		}
		var hasT, hasF bool
		for _, v := range c.Values {
			if v.Bool {
				hasT = true
			} else {
				hasF = true
			}
		}
		p = func(r *record) bool {
			if get(r) {
				return hasT
			}
			return hasF
		}
	default:
		return nil, unsupported(c.Op, c.Field)
	}
	switch c.Op {
	case dsl.OpIn:
		return p, nil
	case dsl.OpNin:
		return not(p), nil
	}
	return nil, unsupported(c.Op, c.Field)
}

// textPred is contains/startswith: case-insensitive (both sides lowercased
// with strings.ToLower), on string fields only.
func textPred(c *dsl.TextMatch) (pred, error) {
	i, ok := stringFields[c.Field.Name]
	if !ok {
		return nil, unsupported(c.Op, c.Field)
	}
	needle := strings.ToLower(c.Value)
	switch c.Op {
	case dsl.OpContains:
		return func(r *record) bool { return r.has(i) && strings.Contains(r.lower[i], needle) }, nil
	case dsl.OpStartsWith:
		return func(r *record) bool { return r.has(i) && strings.HasPrefix(r.lower[i], needle) }, nil
	}
	return nil, unsupported(c.Op, c.Field)
}
