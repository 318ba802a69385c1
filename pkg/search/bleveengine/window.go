package bleveengine

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/single"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
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
	// maxCandidates bounds the distinct exact tokens kept between two
	// looks (commonCandidates); beyond it the next look walks the whole
	// dictionary.
	maxCandidates int
}{minDocs: 25000, cap: 512, checkEvery: 10000, maxCandidates: 1 << 19}

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

// How growCommon finds the terms that reached commonRule.minDocs without
// reading the whole dictionary (a real corpus has millions of distinct
// exact tokens: numbers, names, ids) every commonRule.checkEvery writes.
//
// The count a look compares with commonRule.minDocs is the dictionary's
// (FieldDict): the documents of the segments holding the term, those
// deleted or replaced but not yet merged away included. It rises only
// when a document holding the term is written (Upsert, and
// SetContentVectors, which writes the same content again); deletes and
// merges only lower it. After a look, every term whose count reached
// commonRule.minDocs is in C, or C is full (it took the most frequent and
// reached commonRule.cap: no look ever adds a term again). So at the next
// look, a term not in C whose count reaches commonRule.minDocs must be in
// a document written since the last look: the exact tokens of those
// documents (commonCandidates) are the only terms whose counts need
// reading, each a lookup in every segment's dictionary. The look then
// finds exactly what a walk of the whole dictionary would.
//
// The whole dictionary is walked only where the terms of some document
// written since the last look are unknown:
//   - at open, unless the index holds commonCheckedKey for the current
//     commonRule (written by Close after a last look, and removed before
//     the next document is written): an index from before this key, one
//     whose engine crashed or was killed, or one last looked at under
//     another rule;
//   - after a write failed part way (the index may hold documents whose
//     terms were not collected), a look or the recording of its terms
//     failed (the candidates were taken), or more than
//     commonRule.maxCandidates distinct tokens were written since the
//     last look (the set is dropped rather than grown without bound; the
//     walk then costs what every look cost before).
// (Should an engine from before commonCheckedKey write documents into an
// index a newer one closed, the newer one's next open skips the walk: a
// term that reached the count then joins C only once a document holding
// it is written again. C only decides which NEAR pairs are answered from
// window pairs, never what a search finds.)

// commonCheckedKey marks an index whose C holds every term that reached
// commonRule.minDocs (or is full) and which no document was written into
// since: its value is commonCheckedValue() of the rule it was checked
// under.
var commonCheckedKey = []byte("docrepo.bleveengine.common.checked")

// commonCheckedValue is commonCheckedKey's value for the current rule.
func commonCheckedValue() []byte {
	return fmt.Appendf(nil, "%d %d", commonRule.minDocs, commonRule.cap)
}

// commonCandidates are the exact tokens of the documents written since
// the last look for common terms (see above). Safe for concurrent use
// (the batches of an Upsert are written concurrently).
type commonCandidates struct {
	mu    sync.Mutex
	terms map[string]struct{}
	// walk: the next look walks the whole dictionary (terms is then
	// empty and not grown).
	walk bool
}

// add collects the exact tokens of docs, written to the index (analysed
// by it: their fields hold their tokens).
func (c *commonCandidates) add(docs []*document.Document) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.walk {
		return
	}
	if c.terms == nil {
		c.terms = map[string]struct{}{}
	}
	for _, d := range docs {
		for _, f := range d.Fields {
			if f.Name() != fieldExact {
				continue
			}
			tf := f.AnalyzedTokenFrequencies()
			if tf == nil {
				// Not analysed: its tokens are unknown.
				c.walk, c.terms = true, nil
				return
			}
			for t := range tf {
				c.terms[t] = struct{}{}
			}
		}
	}
	if len(c.terms) > commonRule.maxCandidates {
		c.walk, c.terms = true, nil
	}
}

// needWalk makes the next look walk the whole dictionary.
func (c *commonCandidates) needWalk() {
	c.mu.Lock()
	c.walk, c.terms = true, nil
	c.mu.Unlock()
}

// take returns the candidates (walk: the dictionary must be walked
// instead) and starts an empty set.
func (c *commonCandidates) take() (terms map[string]struct{}, walk bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	terms, walk = c.terms, c.walk
	c.terms, c.walk = nil, false
	return terms, walk
}

// commonLooked, when set (tests), is called by every look for common
// terms with the reader it read, C before it, whether it walked the whole
// dictionary, and what it found (before the cap cut it).
var commonLooked func(r index.IndexReader, c *commonSet, walked bool, found []string)

// termCount is a term and its dictionary count.
type termCount struct {
	term  string
	count uint64
}

// newCommonTerms returns the exact tokens not in c whose dictionary count
// in idx reached commonRule.minDocs, most frequent first, at most enough
// to fill c up to commonRule.cap: from the counts of candidates, or, when
// walk is set, of every term of the dictionary.
func newCommonTerms(idx bleve.Index, c *commonSet, candidates map[string]struct{}, walk bool) ([]string, error) {
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
	var found []termCount
	if walk {
		found, err = commonByWalk(r, c)
	} else {
		found, err = commonByLookup(r, c, candidates)
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(found, func(x, y termCount) int {
		return cmp.Or(cmp.Compare(y.count, x.count), strings.Compare(x.term, y.term))
	})
	if commonLooked != nil {
		all := make([]string, len(found))
		for i, f := range found {
			all[i] = f.term
		}
		commonLooked(r, c, walk, all)
	}
	out := make([]string, 0, min(room, len(found)))
	for _, f := range found[:min(room, len(found))] {
		out = append(out, f.term)
	}
	return out, nil
}

// commonByWalk returns the terms not in c whose dictionary count reached
// commonRule.minDocs, walking the whole dictionary.
func commonByWalk(r index.IndexReader, c *commonSet) ([]termCount, error) {
	dict, err := r.FieldDict(fieldExact)
	if err != nil {
		return nil, err
	}
	defer dict.Close()
	var found []termCount
	for {
		de, err := dict.Next()
		if err != nil {
			return nil, err
		}
		if de == nil {
			return found, nil
		}
		if de.Count >= commonRule.minDocs && c.since[de.Term] == 0 {
			found = append(found, termCount{de.Term, de.Count})
		}
	}
}

// commonByLookup returns the candidates not in c whose dictionary count
// reached commonRule.minDocs: the sum over the segments of their postings
// (deleted documents included, as FieldDict counts them).
func commonByLookup(r index.IndexReader, c *commonSet, candidates map[string]struct{}) ([]termCount, error) {
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return commonByWalk(r, c)
	}
	// A segment holds a term in at most all its documents: with the
	// segments largest first and rest[i] the documents of segments i and
	// after, a term that has n documents in segments 0..i-1 cannot reach
	// commonRule.minDocs once n + rest[i] < commonRule.minDocs. A rare
	// term (most candidates) is then looked up in the few large segments
	// only, not in the many small ones of the latest writes.
	segs := slices.Clone(snap.Segments())
	slices.SortFunc(segs, func(a, b *scorch.SegmentSnapshot) int {
		return cmp.Compare(b.Segment().Count(), a.Segment().Count())
	})
	dicts := make([]segment.TermDictionary, len(segs))
	rest := make([]uint64, len(segs)+1)
	for i := len(segs) - 1; i >= 0; i-- {
		d, err := segs[i].Segment().Dictionary(fieldExact)
		if err != nil {
			return nil, err
		}
		dicts[i], rest[i] = d, rest[i+1]+segs[i].Segment().Count()
	}
	// In order: neighbouring lookups share the dictionaries' paths
	// (measured: a third less CPU, the sort included).
	terms := make([]string, 0, len(candidates))
	for t := range candidates {
		if c.since[t] == 0 {
			terms = append(terms, t)
		}
	}
	slices.Sort(terms)
	var (
		found []termCount
		pl    segment.PostingsList
		buf   []byte
		err   error
	)
	for _, t := range terms {
		buf = append(buf[:0], t...)
		var n uint64
		for i, d := range dicts {
			if n+rest[i] < commonRule.minDocs {
				break
			}
			if pl, err = d.PostingsList(buf, nil, pl); err != nil {
				return nil, err
			}
			n += pl.Count()
		}
		if n >= commonRule.minDocs {
			found = append(found, termCount{t, n})
		}
	}
	return found, nil
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
		// The candidates are kept for the look that will be made.
		return nil
	}
	e.sinceCommon = 0
	cur := e.common.Load()
	candidates, walk := e.candidates.take()
	terms, err := newCommonTerms(idx, cur, candidates, walk)
	if err != nil {
		e.candidates.needWalk()
		return err
	}
	if len(terms) == 0 {
		return nil
	}
	next := cur.with(terms)
	if err := writeCommon(idx, next); err != nil {
		e.candidates.needWalk()
		return fmt.Errorf("record common terms: %w", err)
	}
	e.common.Store(next)
	slog.Info("bleveengine: common terms for NEAR grown", "dir", e.dir, "version", next.version(),
		"added", len(terms), "common_terms", next.size(), "documents", live)
	return nil
}

// collectCommon adds the exact tokens of docs, just written to idx by a
// writer holding writeMu, to the candidates for C (nothing once C is
// full); failed says the write failed, so the index may hold documents
// whose tokens are unknown.
func (e *Engine) collectCommon(docs []*document.Document, failed bool) {
	switch {
	case !e.features.window || e.common.Load().size() >= commonRule.cap:
	case failed:
		e.candidates.needWalk()
	default:
		e.candidates.add(docs)
	}
}

// beforeContentWrite is called by a writer holding writeMu before it
// writes documents with content: the index stops claiming that C is up
// to date (commonCheckedKey) before it holds a document no look counted.
func (e *Engine) beforeContentWrite(idx bleve.Index) error {
	if !e.commonChecked {
		return nil
	}
	if err := idx.DeleteInternal(commonCheckedKey); err != nil {
		return fmt.Errorf("common terms: %w", err)
	}
	e.commonChecked = false
	return nil
}

// openCommon starts C at open: from the index's record, and up to date
// either by the record that it is (commonCheckedKey) or by a walk of the
// whole dictionary. The caller holds idx alone.
func (e *Engine) openCommon(idx bleve.Index) error {
	checked, err := idx.GetInternal(commonCheckedKey)
	if err != nil {
		return err
	}
	if e.features.window && string(checked) == string(commonCheckedValue()) {
		e.commonChecked, e.sinceCommon = true, 0
		return nil
	}
	e.candidates.needWalk()
	// C is brought up to date here rather than by the first write, which
	// would wait for the walk.
	e.sinceCommon = commonRule.checkEvery
	return e.growCommon(idx)
}

// closeCommon makes a last look for common terms and records that C is
// up to date (commonCheckedKey), so that the next open needs no walk of
// the dictionary. It does nothing when the index is already so marked,
// and leaves it unmarked when the look is not made (fewer live
// documents than commonRule.minDocs). The caller holds writeMu.
func (e *Engine) closeCommon(idx bleve.Index) error {
	if !e.features.window || e.commonChecked || e.opts.InMemory {
		return nil
	}
	e.sinceCommon = max(e.sinceCommon, commonRule.checkEvery)
	if err := e.growCommon(idx); err != nil || e.sinceCommon != 0 {
		return err
	}
	if err := idx.SetInternal(commonCheckedKey, commonCheckedValue()); err != nil {
		return fmt.Errorf("common terms: %w", err)
	}
	e.commonChecked = true
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
