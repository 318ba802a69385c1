package bleveengine

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/single"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
)

// Window pairs (format 5, issue 23): NEAR of two common words. A NEAR of
// two words that each occur in a large share of the documents has as
// candidates every document holding both (up to the whole index), and
// checking their positions costs ~150 ns apiece: 100-300 ms at a million
// documents. The answer for such pairs is computed at index time instead.
//
// The common-term set C holds the exact tokens whose document frequency
// reached commonRule.minDocs (a position check of a rarer word's documents
// costs a few milliseconds at most), up to commonRule.cap terms. For every
// document the field "n" (fieldWindow, indexed without positions) holds,
// for every unordered pair of distinct tokens {a, b} of C that occur with
// at most windowMax other tokens between them, one token "a b g": a ≤ b
// and g the smallest number of tokens between an a and a b in the
// document (0..windowMax). *N<n>"a b" with n ≤ windowMax is then exactly
// the union of the documents of "a b 0" .. "a b n": bitmaps, no positions.
// (The same word twice needs no token: NEAR lets occurrences overlap, so
// *N"a a" matches every document holding a; planPairs knows.)
//
// C grows with the index, so it is versioned and monotone: version v is
// C_{v-1} plus the terms it added (versions[v-1]), persisted in the index
// (commonKey) before any document is analysed with it, and every document
// analysed with a non-empty C records its version as the single token of
// the field "nv" (fieldWindowVer). A pair {a, b} is answered from the
// window field only for documents of version ≥ v0, the first version
// holding both; older documents (and those without a version: analysed
// with an empty C, or by an engine before format 5) are checked by their
// positions. Since a term joins C once its document frequency reaches
// commonRule.minDocs (checked every commonRule.checkEvery documents written), the
// documents of older versions holding a given pair number at most about
// commonRule.minDocs + commonRule.checkEvery: the position check stays bounded.
const (
	fieldWindow    = "n"
	fieldWindowVer = "nv"
	// windowMax is the largest number of tokens between the two words of
	// a window pair (NEAR's default distance).
	windowMax = 10
)

// commonRule says when a term joins C (variables for the tests).
var commonRule = struct {
	// minDocs is the document frequency at which an exact token joins C.
	minDocs uint64
	// cap bounds |C| (at most cap²/2·(windowMax+1) distinct window
	// terms).
	cap int
	// checkEvery is how many documents are written between two looks
	// for new common terms.
	checkEvery int
}{minDocs: 25000, cap: 512, checkEvery: 10000}

// commonKey holds C's versions in the index: a JSON array, version v's
// added terms at index v-1.
var commonKey = []byte("docrepo.bleveengine.common")

// commonSet is one version of C; it is never modified (a new version is a
// new commonSet).
type commonSet struct {
	// versions[v-1] are the terms version v added.
	versions [][]string
	// since maps a term of C to the version it joined in.
	since map[string]int
	// window is the window field's analyzer of this version and marker
	// its version token ("" for the empty set: no fields).
	window analysis.Analyzer
	marker string
}

// newCommonSet returns the set of the given versions.
func newCommonSet(versions [][]string) *commonSet {
	c := &commonSet{versions: versions, since: map[string]int{}}
	for v, terms := range versions {
		for _, t := range terms {
			c.since[t] = v + 1
		}
	}
	if len(versions) > 0 {
		c.marker = strconv.Itoa(len(versions))
		c.window = &analysis.DefaultAnalyzer{
			Tokenizer:    unicode.NewUnicodeTokenizer(),
			TokenFilters: []analysis.TokenFilter{lowercase.NewLowerCaseFilter(), windowFilter{common: c.since}},
		}
	}
	return c
}

// version returns C's version (0: empty).
func (c *commonSet) version() int { return len(c.versions) }

// size returns |C|.
func (c *commonSet) size() int { return len(c.since) }

// pairSince returns the first version holding both a and b, or 0 when no
// version does (or a == b: no window token).
func (c *commonSet) pairSince(a, b string) int {
	if c == nil || a == b {
		return 0
	}
	va, vb := c.since[a], c.since[b]
	if va == 0 || vb == 0 {
		return 0
	}
	return max(va, vb)
}

// with returns the set grown by terms (a new version), or c when terms is
// empty.
func (c *commonSet) with(terms []string) *commonSet {
	if len(terms) == 0 {
		return c
	}
	return newCommonSet(append(slices.Clip(c.versions), terms))
}

// windowTerm is the window token of the pair {a, b} at gap g.
func windowTerm(a, b string, g int) string {
	if b < a {
		a, b = b, a
	}
	return a + " " + b + " " + strconv.Itoa(g)
}

// windowFilter turns a stream of exact tokens into the window tokens of
// the pairs of common terms within windowMax, each pair once at its
// smallest gap.
type windowFilter struct {
	common map[string]int
}

func (f windowFilter) Filter(input analysis.TokenStream) analysis.TokenStream {
	type pair struct{ a, b string }
	var gaps map[pair]int
	for i, t := range input {
		if f.common[string(t.Term)] == 0 {
			continue
		}
		for j := i + 1; j < len(input); j++ {
			u := input[j]
			gap := u.Position - t.Position - 1
			if gap > windowMax {
				break
			}
			if f.common[string(u.Term)] == 0 || string(u.Term) == string(t.Term) {
				continue
			}
			p := pair{string(t.Term), string(u.Term)}
			if p.b < p.a {
				p.a, p.b = p.b, p.a
			}
			if gaps == nil {
				gaps = map[pair]int{}
			}
			if g, ok := gaps[p]; !ok || gap < g {
				gaps[p] = gap
			}
		}
	}
	out := make(analysis.TokenStream, 0, len(gaps))
	for p, g := range gaps {
		out = append(out, &analysis.Token{Term: []byte(windowTerm(p.a, p.b, g)), Position: len(out) + 1, Type: analysis.Shingle})
	}
	return out
}

// markerAnalyzer makes the version marker (the whole text) one token.
var markerAnalyzer = &analysis.DefaultAnalyzer{Tokenizer: single.NewSingleTokenTokenizer()}

// readCommon returns the C an index recorded (the empty set when none).
func readCommon(idx bleve.Index) (*commonSet, error) {
	data, err := idx.GetInternal(commonKey)
	if err != nil {
		return nil, err
	}
	var versions [][]string
	if len(data) > 0 {
		if err := json.Unmarshal(data, &versions); err != nil {
			return nil, fmt.Errorf("common terms: %w", err)
		}
	}
	return newCommonSet(versions), nil
}

// writeCommon records c in idx (durable when it returns: before any
// document is analysed with it).
func writeCommon(idx bleve.Index, c *commonSet) error {
	data, err := json.Marshal(c.versions)
	if err != nil {
		return err
	}
	return idx.SetInternal(commonKey, data)
}

// newCommonTerms returns the exact tokens not in c whose document
// frequency in idx reached commonRule.minDocs, most frequent first, at
// most enough to fill c up to commonRule.cap.
func newCommonTerms(idx bleve.Index, c *commonSet) ([]string, error) {
	room := commonRule.cap - c.size()
	if room <= 0 {
		return nil, nil
	}
	adv, err := idx.Advanced()
	if err != nil {
		return nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	dict, err := r.FieldDict(fieldExact)
	if err != nil {
		return nil, err
	}
	defer dict.Close()
	type tc struct {
		term  string
		count uint64
	}
	var found []tc
	for {
		de, err := dict.Next()
		if err != nil {
			return nil, err
		}
		if de == nil {
			break
		}
		if de.Count >= commonRule.minDocs && c.since[de.Term] == 0 {
			found = append(found, tc{de.Term, de.Count})
		}
	}
	slices.SortFunc(found, func(x, y tc) int {
		return cmp.Or(cmp.Compare(y.count, x.count), strings.Compare(x.term, y.term))
	})
	out := make([]string, 0, min(room, len(found)))
	for _, f := range found[:min(room, len(found))] {
		out = append(out, f.term)
	}
	return out, nil
}

// growCommon looks for new common terms when commonRule.checkEvery documents
// were written since the last look (and the index could hold one), and
// makes them a new version of C, recorded in the index before it is used.
// The caller holds writeMu.
func (e *Engine) growCommon(idx bleve.Index) error {
	if !e.features.window || e.sinceCommon < commonRule.checkEvery {
		return nil
	}
	e.mu.RLock()
	live := e.tab.live
	e.mu.RUnlock()
	if uint64(live) < commonRule.minDocs {
		return nil
	}
	e.sinceCommon = 0
	cur := e.common.Load()
	terms, err := newCommonTerms(idx, cur)
	if err != nil || len(terms) == 0 {
		return err
	}
	next := cur.with(terms)
	if err := writeCommon(idx, next); err != nil {
		return fmt.Errorf("record common terms: %w", err)
	}
	e.common.Store(next)
	slog.Info("bleveengine: common terms for NEAR grown", "dir", e.dir, "version", next.version(),
		"added", len(terms), "common_terms", next.size(), "documents", live)
	return nil
}

// InheritCommon starts e's common terms (window.go) with from's, so that a
// rebuild writing every document into e (a new generation) gives each
// document the window pairs of the current C instead of growing C again
// from nothing. It does nothing when e lacks the window pairs or already
// has common terms, and must be called before e holds documents.
func (e *Engine) InheritCommon(from *Engine) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	idx, err := e.writer()
	if err != nil {
		return err
	}
	c := from.common.Load()
	if !e.features.window || e.common.Load().version() > 0 || c.version() == 0 {
		return nil
	}
	if err := writeCommon(idx, c); err != nil {
		return fmt.Errorf("bleveengine: record common terms: %w", err)
	}
	e.common.Store(c)
	return nil
}
