package opensearchengine

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/token/stop"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"

	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/search/enginetest"
)

// TestEmulatedOpenSearchPassesTheEngineSuite runs the shared behaviour suite against an
// emulator: an in-process HTTP server that evaluates the request bodies
// this package sends the way the OpenSearch documentation says OpenSearch
// does (bool, term, terms, range, wildcard, prefix, match, match_phrase,
// span_near, knn with filter, constant_score, sort with missing _last,
// from/size, _source includes, external versioning, a sentence-based
// highlighter with the html encoder), with the english and exact analyzers
// approximated by bleve's equivalents and BM25 computed directly.
//
// It is NOT OpenSearch. It checks the translation's logic (which clause
// lands where, nesting, escaping, date bounds, the two-step fts+vector,
// client-side vector sorting and paging, snippet clean-up) against the
// suite's expected answers; where the emulator's reading of OpenSearch is
// wrong, both can be wrong together. Only TestRealOpenSearchPassesTheEngineSuite against a real
// OpenSearch settles that.
func TestEmulatedOpenSearchPassesTheEngineSuite(t *testing.T) {
	emu := newEmulator()
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	var n int
	var mu sync.Mutex
	enginetest.Run(t, func(t *testing.T) engine.Engine {
		mu.Lock()
		n++
		index := fmt.Sprintf("emu-%d", n)
		mu.Unlock()
		e, err := New(t.Context(), Config{
			Addresses: []string{srv.URL}, Index: index, Dimensions: 4, Refresh: RefreshWaitFor,
			RetryBackoff: time.Millisecond,
		})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	})
}

// emuAnalyzers mirror the index analyzers: english (UAX #29 tokens,
// possessive, lowercase, Lucene's English stop set, Porter) and exact
// (tokens, lowercase).
type emuAnalyzers struct{ stem, exact analysis.Analyzer }

func newEmuAnalyzers() emuAnalyzers {
	stops := analysis.NewTokenMap()
	for w := range englishStopWords {
		stops.AddToken(w)
	}
	tok := unicode.NewUnicodeTokenizer()
	return emuAnalyzers{
		stem: &analysis.DefaultAnalyzer{Tokenizer: tok, TokenFilters: []analysis.TokenFilter{
			en.NewPossessiveFilter(), lowercase.NewLowerCaseFilter(), stop.NewStopTokensFilter(stops), porter.NewPorterStemmer(),
		}},
		exact: &analysis.DefaultAnalyzer{Tokenizer: tok, TokenFilters: []analysis.TokenFilter{lowercase.NewLowerCaseFilter()}},
	}
}

type emuTok struct {
	term       string
	pos        int
	start, end int
}

func emuAnalyze(a analysis.Analyzer, text string) []emuTok {
	var out []emuTok
	for _, t := range a.Analyze([]byte(text)) {
		out = append(out, emuTok{term: string(t.Term), pos: t.Position, start: t.Start, end: t.End})
	}
	return out
}

type emuDoc struct {
	id      string
	version int64
	deleted bool
	src     map[string]any
	fields  map[string][]emuTok // "content", "content.exact"
}

type emuIndex struct {
	docs map[string]*emuDoc
	// mappings is the create request's mappings; an index a write
	// auto-created has dynamic mappings instead (dynamic).
	mappings json.RawMessage
	dynamic  bool
}

// emuRequest is one request the emulator received.
type emuRequest struct {
	method, path string
	body         []byte
}

func (r emuRequest) String() string { return r.method + " " + r.path }

type emulator struct {
	mu      sync.Mutex
	an      emuAnalyzers
	indexes map[string]*emuIndex
	// aliases: alias → the indexes it points at.
	aliases  map[string][]string
	requests []emuRequest
	// fail, when set, scripts failures: a non-zero status answers the
	// request with that error, before serving it or, with applied, after
	// serving it (the answer lost).
	fail func(method, path string) (status int, applied bool)
}

func newEmulator() *emulator {
	return &emulator{an: newEmuAnalyzers(), indexes: map[string]*emuIndex{}, aliases: map[string][]string{}}
}

func (em *emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	em.mu.Lock()
	defer em.mu.Unlock()
	em.requests = append(em.requests, emuRequest{method: r.Method, path: r.URL.Path, body: body})
	if em.fail != nil {
		if status, applied := em.fail(r.Method, r.URL.Path); status != 0 {
			if applied {
				em.serve(httptest.NewRecorder(), r, body)
			}
			writeJSON(w, status, fmt.Sprintf(`{"error":{"type":"injected","reason":"status %d"},"status":%d}`, status, status))
			return
		}
	}
	em.serve(w, r, body)
}

// resolve returns the index a name designates: the index itself, or the
// one an alias points at.
func (em *emulator) resolve(name string) (string, *emuIndex) {
	if targets, ok := em.aliases[name]; ok {
		if len(targets) != 1 {
			return "", nil
		}
		name = targets[0]
	}
	return name, em.indexes[name]
}

func (em *emulator) serve(w http.ResponseWriter, r *http.Request, body []byte) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/":
		writeJSON(w, 200, `{"version":{"distribution":"opensearch","number":"3.1.0"}}`)
		return
	case parts[0] == "_alias" && len(parts) == 2 && r.Method == http.MethodGet:
		em.getAlias(w, parts[1])
		return
	case parts[0] == "_aliases" && r.Method == http.MethodPost:
		em.updateAliases(w, body)
		return
	case len(parts) == 2 && parts[1] == "_alias" && r.Method == http.MethodGet:
		em.listIndexes(w, parts[0])
		return
	}
	name := parts[0]
	op := ""
	if len(parts) > 1 {
		op = parts[1]
	}
	switch {
	case r.Method == http.MethodPut && op == "":
		em.create(w, name, body)
		return
	case r.Method == http.MethodDelete && op == "":
		em.deleteIndex(w, name)
		return
	}
	index, ix := em.resolve(name)
	if ix == nil && op == "_bulk" && r.Method == http.MethodPost && em.aliases[name] == nil {
		// action.auto_create_index: a write to a missing index creates it
		// with dynamic mappings.
		ix = &emuIndex{docs: map[string]*emuDoc{}, dynamic: true}
		em.indexes[name] = ix
	}
	if ix == nil {
		writeJSON(w, 404, `{"error":{"type":"index_not_found_exception","reason":"no such index"},"status":404}`)
		return
	}
	switch {
	case r.Method == http.MethodPut && op == "_mapping":
		// The put-mapping API: here only _meta (SetEmbedder) changes.
		var put struct {
			Meta json.RawMessage `json:"_meta"`
		}
		var mappings map[string]json.RawMessage
		if json.Unmarshal(body, &put) != nil || put.Meta == nil || json.Unmarshal(ix.mappings, &mappings) != nil {
			writeJSON(w, 400, `{"error":{"type":"emulator","reason":"unsupported put mapping"},"status":400}`)
			return
		}
		mappings["_meta"] = put.Meta
		ix.mappings, _ = json.Marshal(mappings)
		writeJSON(w, 200, `{"acknowledged":true}`)
	case op == "_mapping":
		mappings := ix.mappings
		if ix.dynamic {
			mappings = json.RawMessage(`{"properties":{"content":{"type":"text"},"content_vector":{"type":"float"}}}`)
		}
		b, _ := json.Marshal(map[string]any{index: map[string]any{"mappings": mappings}})
		writeJSON(w, 200, string(b))
	case op == "_refresh" && r.Method == http.MethodPost:
		writeJSON(w, 200, `{"_shards":{"total":1,"successful":1,"failed":0}}`)
	case op == "_bulk":
		em.bulk(w, ix, body)
	case op == "_doc" && len(parts) == 3:
		em.doc(w, r, ix, parts[2])
	case op == "_count":
		n := 0
		for _, d := range ix.docs {
			if !d.deleted {
				n++
			}
		}
		writeJSON(w, 200, fmt.Sprintf(`{"count":%d}`, n))
	case op == "_search":
		var req map[string]any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&req); err != nil {
			writeJSON(w, 400, `{"error":{"type":"parse_exception","reason":"bad json"},"status":400}`)
			return
		}
		out, err := em.search(ix, req)
		if err != nil {
			b, _ := json.Marshal(err.Error())
			writeJSON(w, 400, `{"error":{"type":"emulator","reason":`+string(b)+`},"status":400}`)
			return
		}
		b, _ := json.Marshal(out)
		writeJSON(w, 200, string(b))
	default:
		writeJSON(w, 400, `{"error":{"type":"emulator","reason":"unsupported"},"status":400}`)
	}
}

// create is PUT /<index>: the index with its mappings and aliases.
func (em *emulator) create(w http.ResponseWriter, name string, body []byte) {
	var req struct {
		Mappings json.RawMessage            `json:"mappings"`
		Aliases  map[string]json.RawMessage `json:"aliases"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, 400, `{"error":{"type":"parse_exception","reason":"bad json"},"status":400}`)
		return
	}
	switch {
	case em.indexes[name] != nil:
		writeJSON(w, 400, `{"error":{"type":"resource_already_exists_exception","reason":"index already exists"},"status":400}`)
		return
	case em.aliases[name] != nil:
		writeJSON(w, 400, `{"error":{"type":"invalid_index_name_exception","reason":"an alias with the same name exists"},"status":400}`)
		return
	}
	for alias := range req.Aliases {
		if em.indexes[alias] != nil {
			writeJSON(w, 400, `{"error":{"type":"invalid_alias_name_exception","reason":"an index exists with the same name as the alias"},"status":400}`)
			return
		}
	}
	em.indexes[name] = &emuIndex{docs: map[string]*emuDoc{}, mappings: req.Mappings}
	for alias := range req.Aliases {
		em.aliases[alias] = append(em.aliases[alias], name)
	}
	writeJSON(w, 200, `{"acknowledged":true}`)
}

// deleteIndex is DELETE /<index>: concrete indexes only, as OpenSearch
// refuses to delete through an alias.
func (em *emulator) deleteIndex(w http.ResponseWriter, name string) {
	if em.aliases[name] != nil {
		writeJSON(w, 400, `{"error":{"type":"illegal_argument_exception","reason":"matches an alias, specify the corresponding concrete indices instead"},"status":400}`)
		return
	}
	if em.indexes[name] == nil {
		writeJSON(w, 404, `{"error":{"type":"index_not_found_exception","reason":"no such index"},"status":404}`)
		return
	}
	em.dropIndex(em.indexes, em.aliases, name)
	writeJSON(w, 200, `{"acknowledged":true}`)
}

// dropIndex removes an index and its aliases from the given state.
func (em *emulator) dropIndex(indexes map[string]*emuIndex, aliases map[string][]string, name string) {
	delete(indexes, name)
	for alias, targets := range aliases {
		targets = slices.DeleteFunc(slices.Clone(targets), func(t string) bool { return t == name })
		if len(targets) == 0 {
			delete(aliases, alias)
		} else {
			aliases[alias] = targets
		}
	}
}

// getAlias is GET /_alias/<name>.
func (em *emulator) getAlias(w http.ResponseWriter, alias string) {
	targets := em.aliases[alias]
	if targets == nil {
		writeJSON(w, 404, `{"error":"alias [`+alias+`] missing","status":404}`)
		return
	}
	out := map[string]any{}
	for _, t := range targets {
		out[t] = map[string]any{"aliases": map[string]any{alias: map[string]any{}}}
	}
	b, _ := json.Marshal(out)
	writeJSON(w, 200, string(b))
}

// listIndexes is GET /<pattern>/_alias: every index the pattern (a name,
// or a prefix and *) matches, with its aliases.
func (em *emulator) listIndexes(w http.ResponseWriter, pattern string) {
	out := map[string]any{}
	for name := range em.indexes {
		prefix, wild := strings.CutSuffix(pattern, "*")
		if name != pattern && !(wild && strings.HasPrefix(name, prefix)) {
			continue
		}
		aliases := map[string]any{}
		for alias, targets := range em.aliases {
			if slices.Contains(targets, name) {
				aliases[alias] = map[string]any{}
			}
		}
		out[name] = map[string]any{"aliases": aliases}
	}
	b, _ := json.Marshal(out)
	writeJSON(w, 200, string(b))
}

// updateAliases is POST /_aliases: every action or none. As in
// OpenSearch, remove_index actions apply first (so an alias may take the
// name of an index removed in the same call); a remove of an alias the
// index does not have fails with must_exist and is skipped otherwise.
func (em *emulator) updateAliases(w http.ResponseWriter, body []byte) {
	var req struct {
		Actions []map[string]struct {
			Index     string `json:"index"`
			Alias     string `json:"alias"`
			MustExist bool   `json:"must_exist"`
		} `json:"actions"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Actions) == 0 {
		writeJSON(w, 400, `{"error":{"type":"action_request_validation_exception","reason":"no actions"},"status":400}`)
		return
	}
	indexes := maps.Clone(em.indexes)
	aliases := map[string][]string{}
	for a, t := range em.aliases {
		aliases[a] = slices.Clone(t)
	}
	fail := func(status int, typ, reason string) {
		writeJSON(w, status, fmt.Sprintf(`{"error":{"type":%q,"reason":%q},"status":%d}`, typ, reason, status))
	}
	for _, action := range req.Actions {
		if a, ok := action["remove_index"]; ok {
			if indexes[a.Index] == nil {
				fail(404, "index_not_found_exception", "no such index ["+a.Index+"]")
				return
			}
			em.dropIndex(indexes, aliases, a.Index)
		}
	}
	applied := 0
	for _, action := range req.Actions {
		for kind, a := range action {
			switch kind {
			case "remove_index":
				applied++
			case "remove":
				if indexes[a.Index] == nil {
					fail(404, "index_not_found_exception", "no such index ["+a.Index+"]")
					return
				}
				if !slices.Contains(aliases[a.Alias], a.Index) {
					if a.MustExist {
						fail(404, "aliases_not_found_exception", "aliases ["+a.Alias+"] missing")
						return
					}
					continue
				}
				applied++
				em.dropAlias(aliases, a.Alias, a.Index)
			case "add":
				if indexes[a.Index] == nil {
					fail(404, "index_not_found_exception", "no such index ["+a.Index+"]")
					return
				}
				if indexes[a.Alias] != nil {
					fail(400, "invalid_alias_name_exception", "an index exists with the same name as the alias ["+a.Alias+"]")
					return
				}
				applied++
				if !slices.Contains(aliases[a.Alias], a.Index) {
					aliases[a.Alias] = append(aliases[a.Alias], a.Index)
				}
			default:
				fail(400, "parse_exception", "unknown action "+kind)
				return
			}
		}
	}
	if applied == 0 {
		fail(404, "aliases_not_found_exception", "aliases missing")
		return
	}
	em.indexes, em.aliases = indexes, aliases
	writeJSON(w, 200, `{"acknowledged":true}`)
}

func (em *emulator) dropAlias(aliases map[string][]string, alias, index string) {
	targets := slices.DeleteFunc(aliases[alias], func(t string) bool { return t == index })
	if len(targets) == 0 {
		delete(aliases, alias)
	} else {
		aliases[alias] = targets
	}
}

// log returns the requests received so far.
func (em *emulator) log() []emuRequest {
	em.mu.Lock()
	defer em.mu.Unlock()
	return slices.Clone(em.requests)
}

// state returns the indexes (sorted) and, per alias, the indexes it
// points at.
func (em *emulator) state() ([]string, map[string][]string) {
	em.mu.Lock()
	defer em.mu.Unlock()
	names := slices.Sorted(maps.Keys(em.indexes))
	aliases := map[string][]string{}
	for a, t := range em.aliases {
		aliases[a] = slices.Clone(t)
	}
	return names, aliases
}

// liveDocs returns the number of live documents of an index (-1: none).
func (em *emulator) liveDocs(index string) int {
	em.mu.Lock()
	defer em.mu.Unlock()
	ix := em.indexes[index]
	if ix == nil {
		return -1
	}
	n := 0
	for _, d := range ix.docs {
		if !d.deleted {
			n++
		}
	}
	return n
}

func (em *emulator) bulk(w http.ResponseWriter, ix *emuIndex, body []byte) {
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	var items []string
	for i := 0; i+1 < len(lines); i += 2 {
		var action map[string]map[string]any
		json.Unmarshal([]byte(lines[i]), &action)
		meta := action["index"]
		id := meta["_id"].(string)
		ver := int64(meta["version"].(float64))
		var src map[string]any
		dec := json.NewDecoder(strings.NewReader(lines[i+1]))
		dec.UseNumber()
		dec.Decode(&src)
		gte := meta["version_type"] == "external_gte"
		if cur := ix.docs[id]; cur != nil && (ver < cur.version || ver == cur.version && !gte) {
			items = append(items, fmt.Sprintf(`{"index":{"_id":%q,"status":409,"error":{"type":"version_conflict_engine_exception","reason":"conflict"}}}`, id))
			continue
		}
		content, _ := src["content"].(string)
		ix.docs[id] = &emuDoc{id: id, version: ver, src: src, fields: map[string][]emuTok{
			"content":       emuAnalyze(em.an.stem, content),
			"content.exact": emuAnalyze(em.an.exact, content),
		}}
		items = append(items, fmt.Sprintf(`{"index":{"_id":%q,"status":201}}`, id))
	}
	writeJSON(w, 200, `{"errors":true,"items":[`+strings.Join(items, ",")+`]}`)
}

func (em *emulator) doc(w http.ResponseWriter, r *http.Request, ix *emuIndex, id string) {
	cur := ix.docs[id]
	switch r.Method {
	case http.MethodGet:
		if cur == nil || cur.deleted {
			writeJSON(w, 404, `{"found":false}`)
			return
		}
		writeJSON(w, 200, fmt.Sprintf(`{"found":true,"_version":%d}`, cur.version))
	case http.MethodDelete:
		ver, _ := strconv.ParseInt(r.URL.Query().Get("version"), 10, 64)
		if cur != nil && ver < cur.version {
			writeJSON(w, 409, `{"error":{"type":"version_conflict_engine_exception","reason":"conflict"},"status":409}`)
			return
		}
		ix.docs[id] = &emuDoc{id: id, version: ver, deleted: true}
		if cur == nil || cur.deleted {
			writeJSON(w, 404, `{"result":"not_found"}`)
			return
		}
		writeJSON(w, 200, `{"result":"deleted"}`)
	}
}

// emuStats are the BM25 statistics of the live documents.
type emuStats struct {
	n     int
	df    map[string]map[string]int // field → term → documents
	avgdl map[string]float64
}

func statsOf(docs []*emuDoc) *emuStats {
	s := &emuStats{n: len(docs), df: map[string]map[string]int{}, avgdl: map[string]float64{}}
	for _, f := range []string{"content", "content.exact"} {
		s.df[f] = map[string]int{}
		total := 0
		for _, d := range docs {
			seen := map[string]bool{}
			for _, t := range d.fields[f] {
				if !seen[t.term] {
					seen[t.term] = true
					s.df[f][t.term]++
				}
			}
			total += len(d.fields[f])
		}
		if len(docs) > 0 {
			s.avgdl[f] = float64(total) / float64(len(docs))
		}
	}
	return s
}

// bm25 is Lucene's BM25 (k1 1.2, b 0.75) of a term with frequency tf.
func (s *emuStats) bm25(field, term string, tf float64, dl int) float64 {
	if tf == 0 {
		return 0
	}
	df := float64(s.df[field][term])
	idf := math.Log(1 + (float64(s.n)-df+0.5)/(df+0.5))
	norm := 1.2 * (1 - 0.75 + 0.75*float64(dl)/s.avgdl[field])
	return idf * tf * 2.2 / (tf + norm)
}

type emuCtx struct {
	em    *emulator
	stats *emuStats
	all   []*emuDoc
}

func (em *emulator) search(ix *emuIndex, req map[string]any) (map[string]any, error) {
	var live []*emuDoc
	for _, d := range ix.docs {
		if !d.deleted {
			live = append(live, d)
		}
	}
	slices.SortFunc(live, func(a, b *emuDoc) int { return cmp.Compare(num(a.src["id"]), num(b.src["id"])) })
	c := &emuCtx{em: em, stats: statsOf(live), all: live}
	type hit struct {
		d     *emuDoc
		score float64
	}
	var hits []hit
	q, _ := req["query"].(map[string]any)
	knn, ok := q["knn"]
	path := ""
	if nested, isNested := q["nested"].(map[string]any); isNested {
		// Only the knn query over passages is nested; score_mode max:
		// a document scores as its nearest passage.
		inner, _ := nested["query"].(map[string]any)
		if nested["score_mode"] != "max" || inner["knn"] == nil {
			return nil, fmt.Errorf("unsupported nested query %v", nested)
		}
		path, _ = nested["path"].(string)
		knn, ok = inner["knn"], true
	}
	if ok {
		res, err := c.knn(path, knn.(map[string]any))
		if err != nil {
			return nil, err
		}
		for _, h := range res {
			hits = append(hits, hit{h.d, h.score})
		}
	} else {
		for _, d := range live {
			ok, s, err := c.eval(q, d)
			if err != nil {
				return nil, err
			}
			if ok {
				hits = append(hits, hit{d, s})
			}
		}
	}
	// Sort.
	sortKeys, _ := req["sort"].([]any)
	slices.SortStableFunc(hits, func(a, b hit) int {
		for _, k := range sortKeys {
			for field, spec := range k.(map[string]any) {
				desc := spec.(map[string]any)["order"] == "desc"
				var r int
				if field == "_score" {
					r = cmp.Compare(a.score, b.score)
				} else {
					av, aok := sortValue(a.d, field)
					bv, bok := sortValue(b.d, field)
					switch {
					case !aok && !bok:
						continue
					case !aok:
						return 1
					case !bok:
						return -1
					}
					r = compareValues(av, bv)
				}
				if desc {
					r = -r
				}
				if r != 0 {
					return r
				}
			}
		}
		return 0
	})
	// search_after (on a sort by one field, ascending, as Revisions asks):
	// only the hits after the given sort value.
	if after, ok := req["search_after"].([]any); ok && len(after) == 1 && len(sortKeys) == 1 {
		for field := range sortKeys[0].(map[string]any) {
			kept := hits[:0]
			for _, h := range hits {
				if v, ok := sortValue(h.d, field); ok && compareValues(v, int64(num(after[0]))) > 0 {
					kept = append(kept, h)
				}
			}
			hits = kept
		}
	}
	total := len(hits)
	from, size := int(num(req["from"])), 10
	if v, ok := req["size"]; ok {
		size = int(num(v))
	}
	page := hits[min(from, len(hits)):min(from+size, len(hits))]
	var out []any
	for _, h := range page {
		rh := map[string]any{"_id": h.d.id, "_score": h.score}
		if req["version"] == true {
			rh["_version"] = h.d.version
		}
		if len(sortKeys) == 1 {
			for field := range sortKeys[0].(map[string]any) {
				if v, ok := sortValue(h.d, field); ok {
					rh["sort"] = []any{v}
				}
			}
		}
		if inc, ok := req["_source"].(map[string]any); ok {
			src := map[string]any{}
			for _, f := range inc["includes"].([]any) {
				if v, ok := h.d.src[f.(string)]; ok {
					src[f.(string)] = v
				}
			}
			rh["_source"] = src
		}
		if hl, ok := req["highlight"].(map[string]any); ok {
			frags := c.highlight(q, h.d, hl)
			if len(frags) > 0 {
				rh["highlight"] = map[string]any{"content": frags}
			}
		}
		out = append(out, rh)
	}
	resp := map[string]any{
		"timed_out": false,
		"_shards":   map[string]any{"total": 1, "successful": 1, "failed": 0},
		"hits":      map[string]any{"hits": out},
	}
	if aggs, ok := req["aggs"].(map[string]any); ok {
		// Only anonymous filters aggregations (DocFreqs'): one bucket per
		// filter, in order, counting the query's hits it matches.
		res := map[string]any{}
		for name, spec := range aggs {
			if sampler, ok := spec.(map[string]any)["sampler"].(map[string]any); ok {
				// MeanContentVector's: sampler > nested > scripted_metric.
				docs := make([]*emuDoc, 0, len(hits))
				for _, h := range hits[:min(len(hits), int(num(sampler["shard_size"])))] {
					docs = append(docs, h.d)
				}
				v, err := emuMeanAgg(docs, spec.(map[string]any))
				if err != nil {
					return nil, err
				}
				res[name] = v
				continue
			}
			fs, ok := spec.(map[string]any)["filters"].(map[string]any)["filters"].([]any)
			if !ok || len(spec.(map[string]any)) != 1 {
				return nil, fmt.Errorf("unsupported aggregation %s: %v", name, spec)
			}
			var buckets []any
			for _, f := range fs {
				n := 0
				for _, h := range hits {
					ok, _, err := c.eval(f.(map[string]any), h.d)
					if err != nil {
						return nil, err
					}
					if ok {
						n++
					}
				}
				buckets = append(buckets, map[string]any{"doc_count": n})
			}
			res[name] = map[string]any{"buckets": buckets}
		}
		resp["aggregations"] = res
	}
	if req["track_total_hits"] == true {
		resp["hits"].(map[string]any)["total"] = map[string]any{"value": total, "relation": "eq"}
	}
	return resp, nil
}

func num(v any) float64 {
	switch v := v.(type) {
	case json.Number:
		f, _ := v.Float64()
		return f
	case float64:
		return v
	case int:
		return float64(v)
	case int64:
		return float64(v)
	}
	return 0
}

// sortValue is a document's sort value: keyword string, long, boolean or
// date (milliseconds).
func sortValue(d *emuDoc, field string) (any, bool) {
	v, ok := d.src[field]
	if !ok || v == nil {
		return nil, false
	}
	switch field {
	case "date", "entry_date":
		ms, err := parseDateMS(v.(string))
		if err != nil {
			return nil, false
		}
		return ms, true
	}
	switch v := v.(type) {
	case json.Number:
		n, _ := v.Int64()
		return n, true
	case string, bool:
		return v, true
	}
	return nil, false
}

// parseDateMS parses a date as the date field does, truncated to
// milliseconds.
func parseDateMS(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, err
	}
	return t.UnixMilli(), nil
}

type emuHit struct {
	d     *emuDoc
	score float64
}

// knn returns the k nearest documents by the vector field, which is a
// field of the nested objects at path when path is not empty: then a
// document is as near as its nearest object, and counts once.
func (c *emuCtx) knn(path string, spec map[string]any) ([]emuHit, error) {
	for field, raw := range spec {
		body := raw.(map[string]any)
		var vec []float64
		for _, x := range body["vector"].([]any) {
			vec = append(vec, num(x))
		}
		k := int(num(body["k"]))
		var filter map[string]any
		if f, ok := body["filter"]; ok {
			filter = f.(map[string]any)
		}
		var res []emuHit
		for _, d := range c.all {
			var vectors [][]any
			if path == "" {
				if dv, ok := d.src[field].([]any); ok {
					vectors = append(vectors, dv)
				}
			} else {
				sub, ok := strings.CutPrefix(field, path+".")
				if !ok {
					return nil, fmt.Errorf("knn field %s is not under the nested path %s", field, path)
				}
				objs, _ := d.src[path].([]any)
				for _, o := range objs {
					if dv, ok := o.(map[string]any)[sub].([]any); ok {
						vectors = append(vectors, dv)
					}
				}
			}
			if len(vectors) == 0 {
				continue
			}
			if filter != nil {
				ok, _, err := c.eval(filter, d)
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
			}
			best := math.Inf(1)
			for _, dv := range vectors {
				var d2 float64
				for i := range vec {
					x := float64(float32(num(dv[i])) - float32(vec[i]))
					d2 += x * x
				}
				best = min(best, d2)
			}
			res = append(res, emuHit{d, float64(float32(1 / (1 + best)))})
		}
		slices.SortStableFunc(res, func(a, b emuHit) int { return -cmp.Compare(a.score, b.score) })
		return res[:min(k, len(res))], nil
	}
	return nil, fmt.Errorf("empty knn")
}

// eval evaluates a query on a document: whether it matches and its score.
func (c *emuCtx) eval(q map[string]any, d *emuDoc) (bool, float64, error) {
	if len(q) != 1 {
		return false, 0, fmt.Errorf("query object with %d keys: %v", len(q), q)
	}
	for kind, raw := range q {
		switch kind {
		case "match_all":
			return true, 1, nil
		case "match_none":
			return false, 0, nil
		case "constant_score":
			ok, _, err := c.eval(raw.(map[string]any)["filter"].(map[string]any), d)
			return ok, 1, err
		case "bool":
			return c.evalBool(raw.(map[string]any), d)
		case "term", "terms", "range", "wildcard", "prefix", "match", "match_phrase", "span_near", "span_term":
			return c.leaf(kind, raw.(map[string]any), d)
		case "nested":
			// A nested query (outside knn) matches a document with at
			// least one object at its path; only match_all inside
			// (MeanContentVector's filter).
			body := raw.(map[string]any)
			inner, _ := body["query"].(map[string]any)
			if _, ok := inner["match_all"]; !ok || len(inner) != 1 {
				return false, 0, fmt.Errorf("unsupported nested query %v", body)
			}
			objs, _ := d.src[body["path"].(string)].([]any)
			return len(objs) > 0, 1, nil
		case "function_score":
			// Only MeanContentVector's random order: the hits of its
			// query (their order is the emulator's, by id; a sample of
			// every document is the same in any order).
			body := raw.(map[string]any)
			if _, ok := body["random_score"]; !ok || body["boost_mode"] != "replace" {
				return false, 0, fmt.Errorf("unsupported function_score %v", body)
			}
			ok, _, err := c.eval(body["query"].(map[string]any), d)
			return ok, 0, err
		case "exists":
			// A field with any non-null value exists, "" included (a
			// text field's norm is written even without tokens).
			field, _ := raw.(map[string]any)["field"].(string)
			v, ok := d.src[strings.TrimSuffix(field, ".exact")]
			return ok && v != nil, 1, nil
		}
		return false, 0, fmt.Errorf("unsupported query %q", kind)
	}
	return false, 0, nil
}

func (c *emuCtx) evalBool(b map[string]any, d *emuDoc) (bool, float64, error) {
	score := 0.0
	for _, occur := range []string{"must", "filter", "must_not", "should"} {
		if _, ok := b[occur]; !ok {
			continue
		}
		qs, ok := b[occur].([]any)
		if !ok {
			return false, 0, fmt.Errorf("bool %s is not an array", occur)
		}
		matched := 0
		for _, sub := range qs {
			ok, s, err := c.eval(sub.(map[string]any), d)
			if err != nil {
				return false, 0, err
			}
			switch occur {
			case "must":
				if !ok {
					return false, 0, nil
				}
				score += s
			case "filter":
				if !ok {
					return false, 0, nil
				}
			case "must_not":
				if ok {
					return false, 0, nil
				}
			case "should":
				if ok {
					matched++
					score += s
				}
			}
		}
		if occur == "should" && matched < int(num(b["minimum_should_match"])) {
			return false, 0, nil
		}
	}
	for k := range b {
		if !slices.Contains([]string{"must", "filter", "must_not", "should", "minimum_should_match"}, k) {
			return false, 0, fmt.Errorf("unsupported bool member %q", k)
		}
	}
	return true, score, nil
}

// fieldValues returns a document's indexed values of a metadata field.
func fieldValues(d *emuDoc, field string) []any {
	lower := strings.HasSuffix(field, lowerSuffix)
	v, ok := d.src[strings.TrimSuffix(field, lowerSuffix)]
	if !ok || v == nil {
		return nil
	}
	vals, isArr := v.([]any)
	if !isArr {
		vals = []any{v}
	}
	if lower {
		for i := range vals {
			vals[i] = strings.ToLower(vals[i].(string))
		}
	}
	return vals
}

func (c *emuCtx) leaf(kind string, body map[string]any, d *emuDoc) (bool, float64, error) {
	if kind == "span_near" || kind == "span_term" {
		spans, err := c.spans(map[string]any{kind: body}, d)
		if err != nil {
			return false, 0, err
		}
		return len(spans) > 0, float64(len(spans)), nil
	}
	for field, spec := range body {
		if strings.HasPrefix(field, "content") {
			return c.text(kind, field, spec, d)
		}
		vals := fieldValues(d, field)
		switch kind {
		case "term":
			for _, v := range vals {
				if equalValue(field, v, spec) {
					return true, 0, nil
				}
			}
		case "terms":
			for _, v := range vals {
				for _, want := range spec.([]any) {
					if equalValue(field, v, want) {
						return true, 0, nil
					}
				}
			}
		case "range":
			for _, v := range vals {
				if inRange(field, v, spec.(map[string]any)) {
					return true, 0, nil
				}
			}
		case "wildcard":
			re := wildcardRE(spec.(map[string]any)["value"].(string))
			for _, v := range vals {
				if re.MatchString(v.(string)) {
					return true, 0, nil
				}
			}
		case "prefix":
			p := spec.(map[string]any)["value"].(string)
			for _, v := range vals {
				if strings.HasPrefix(v.(string), p) {
					return true, 0, nil
				}
			}
		default:
			return false, 0, fmt.Errorf("%s on %s", kind, field)
		}
		return false, 0, nil
	}
	return false, 0, fmt.Errorf("empty %s", kind)
}

func isDateField(f string) bool { return f == "date" || f == "entry_date" }

func equalValue(field string, v, want any) bool {
	if isDateField(field) {
		a, err1 := parseDateMS(v.(string))
		b, err2 := parseDateMS(want.(string))
		return err1 == nil && err2 == nil && a == b
	}
	return fmt.Sprint(v) == fmt.Sprint(want)
}

// inRange compares like the field type: dates in milliseconds (bounds
// truncated, gt adding one), longs numerically, keywords by bytes.
func inRange(field string, v any, r map[string]any) bool {
	for op, bound := range r {
		var c int
		switch {
		case isDateField(field):
			a, _ := parseDateMS(v.(string))
			b, err := parseDateMS(bound.(string))
			if err != nil {
				return false
			}
			c = cmp.Compare(a, b)
		case field == "id" || field == "filesbelongto":
			c = cmp.Compare(num(v), num(bound))
		default:
			c = strings.Compare(v.(string), bound.(string))
		}
		ok := map[string]bool{"gt": c > 0, "gte": c >= 0, "lt": c < 0, "lte": c <= 0}[op]
		if !ok {
			return false
		}
	}
	return true
}

// wildcardRE turns a wildcard pattern (*, ?, \ escapes) into a regexp.
func wildcardRE(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); {
		r, w := utf8.DecodeRuneInString(p[i:])
		switch r {
		case '\\':
			if i+w < len(p) {
				r2, w2 := utf8.DecodeRuneInString(p[i+w:])
				b.WriteString(regexp.QuoteMeta(string(r2)))
				i += w + w2
				continue
			}
		case '*':
			b.WriteString("(?s:.*)")
		case '?':
			b.WriteString("(?s:.)")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
		i += w
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

func (c *emuCtx) analyzer(field string) analysis.Analyzer {
	if field == fieldContent {
		return c.em.an.stem
	}
	return c.em.an.exact
}

// text evaluates a full-text leaf on content or content.exact.
func (c *emuCtx) text(kind, field string, spec any, d *emuDoc) (bool, float64, error) {
	toks := d.fields[field]
	dl := len(toks)
	switch kind {
	case "term":
		tf := countTerm(toks, spec.(string))
		return tf > 0, c.stats.bm25(field, spec.(string), float64(tf), dl), nil
	case "match":
		qt := emuAnalyze(c.analyzer(field), spec.(map[string]any)["query"].(string))
		if len(qt) == 0 {
			return false, 0, nil // zero_terms_query none
		}
		score, any := 0.0, false
		for _, t := range qt {
			tf := countTerm(toks, t.term)
			if tf > 0 {
				any = true
				score += c.stats.bm25(field, t.term, float64(tf), dl)
			}
		}
		return any, score, nil
	case "match_phrase":
		qt := emuAnalyze(c.analyzer(field), spec.(map[string]any)["query"].(string))
		if len(qt) == 0 {
			return false, 0, nil
		}
		starts := phraseMatches(toks, qt)
		score := 0.0
		for _, t := range qt {
			score += c.stats.bm25(field, t.term, float64(len(starts)), dl)
		}
		return len(starts) > 0, score, nil
	case "prefix":
		p := spec.(map[string]any)["value"].(string)
		for _, t := range toks {
			if strings.HasPrefix(t.term, p) {
				return true, 1, nil
			}
		}
		return false, 0, nil
	}
	return false, 0, fmt.Errorf("%s on %s", kind, field)
}

func countTerm(toks []emuTok, term string) int {
	n := 0
	for _, t := range toks {
		if t.term == term {
			n++
		}
	}
	return n
}

// phraseMatches returns the token indexes where the query tokens occur at
// the same relative positions (position gaps of removed stop words kept).
func phraseMatches(toks, qt []emuTok) [][2]int {
	byPos := map[int]emuTok{}
	for _, t := range toks {
		byPos[t.pos] = t
	}
	var out [][2]int
	for _, t := range toks {
		if t.term != qt[0].term {
			continue
		}
		ok := true
		for _, q := range qt[1:] {
			if u, found := byPos[t.pos+q.pos-qt[0].pos]; !found || u.term != q.term {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, [2]int{t.pos, t.pos + qt[len(qt)-1].pos - qt[0].pos})
		}
	}
	return out
}

// span is a match of a span query: token positions [start, end).
type span struct{ start, end int }

func (c *emuCtx) spans(q map[string]any, d *emuDoc) ([]span, error) {
	toks := d.fields[fieldContentExact]
	for kind, raw := range q {
		body := raw.(map[string]any)
		switch kind {
		case "span_term":
			var out []span
			for _, t := range toks {
				if t.term == body[fieldContentExact] {
					out = append(out, span{t.pos, t.pos + 1})
				}
			}
			return out, nil
		case "span_multi":
			p := body["match"].(map[string]any)["prefix"].(map[string]any)[fieldContentExact].(map[string]any)["value"].(string)
			var out []span
			for _, t := range toks {
				if strings.HasPrefix(t.term, p) {
					out = append(out, span{t.pos, t.pos + 1})
				}
			}
			return out, nil
		case "span_near":
			var subs [][]span
			for _, cl := range body["clauses"].([]any) {
				s, err := c.spans(cl.(map[string]any), d)
				if err != nil {
					return nil, err
				}
				if len(s) == 0 {
					return nil, nil
				}
				subs = append(subs, s)
			}
			slop := int(num(body["slop"]))
			inOrder := body["in_order"] == true
			var out []span
			combos(subs, func(choice []span) {
				if inOrder {
					gaps := 0
					for i := 1; i < len(choice); i++ {
						if choice[i].start < choice[i-1].end {
							return
						}
						gaps += choice[i].start - choice[i-1].end
					}
					if gaps <= slop {
						out = append(out, span{choice[0].start, choice[len(choice)-1].end})
					}
					return
				}
				lo, hi, total := choice[0].start, choice[0].end, 0
				for _, s := range choice {
					lo, hi, total = min(lo, s.start), max(hi, s.end), total+s.end-s.start
				}
				if hi-lo-total <= slop {
					out = append(out, span{lo, hi})
				}
			})
			return out, nil
		}
		return nil, fmt.Errorf("unsupported span query %q", kind)
	}
	return nil, nil
}

// combos calls fn with every choice of one span per clause.
func combos(subs [][]span, fn func([]span)) {
	choice := make([]span, len(subs))
	var rec func(i int)
	rec = func(i int) {
		if i == len(subs) {
			fn(choice)
			return
		}
		for _, s := range subs[i] {
			choice[i] = s
			rec(i + 1)
		}
	}
	rec(0)
}

// highlight emulates the unified highlighter on content with
// matched_fields [content, content.exact]: the byte ranges of the terms of
// the positive full-text leaves (not under must_not or filter), fragments
// of whole sentences holding a match (cut after fragment_size), at most
// number_of_fragments in document order, html-encoded (& < > " ' /).
func (c *emuCtx) highlight(q map[string]any, d *emuDoc, hl map[string]any) []string {
	content, _ := d.src["content"].(string)
	var ranges [][2]int
	var walk func(q map[string]any)
	walk = func(q map[string]any) {
		for kind, raw := range q {
			body, _ := raw.(map[string]any)
			switch kind {
			case "bool":
				for _, occur := range []string{"must", "should"} {
					if qs, ok := body[occur].([]any); ok {
						for _, sub := range qs {
							walk(sub.(map[string]any))
						}
					}
				}
			case "match", "match_phrase", "term", "prefix":
				for field, spec := range body {
					if !strings.HasPrefix(field, "content") {
						continue
					}
					toks := d.fields[field]
					switch kind {
					case "term":
						for _, t := range toks {
							if t.term == spec {
								ranges = append(ranges, [2]int{t.start, t.end})
							}
						}
					case "prefix":
						p := spec.(map[string]any)["value"].(string)
						for _, t := range toks {
							if strings.HasPrefix(t.term, p) {
								ranges = append(ranges, [2]int{t.start, t.end})
							}
						}
					case "match":
						for _, qt := range emuAnalyze(c.analyzer(field), spec.(map[string]any)["query"].(string)) {
							for _, t := range toks {
								if t.term == qt.term {
									ranges = append(ranges, [2]int{t.start, t.end})
								}
							}
						}
					case "match_phrase":
						qt := emuAnalyze(c.analyzer(field), spec.(map[string]any)["query"].(string))
						if len(qt) == 0 {
							continue
						}
						byPos := map[int]emuTok{}
						for _, t := range toks {
							byPos[t.pos] = t
						}
						for _, m := range phraseMatches(toks, qt) {
							for _, q := range qt {
								u := byPos[m[0]+q.pos-qt[0].pos]
								ranges = append(ranges, [2]int{u.start, u.end})
							}
						}
					}
				}
			case "span_near", "span_term":
				spans, _ := c.spans(q, d)
				byPos := map[int]emuTok{}
				for _, t := range d.fields[fieldContentExact] {
					byPos[t.pos] = t
				}
				for _, s := range spans {
					for p := s.start; p < s.end; p++ {
						ranges = append(ranges, [2]int{byPos[p].start, byPos[p].end})
					}
				}
			}
		}
	}
	walk(q)
	if len(ranges) == 0 {
		return nil
	}
	field := hl["fields"].(map[string]any)["content"].(map[string]any)
	size := int(num(field["fragment_size"]))
	maxFrags := int(num(field["number_of_fragments"]))
	// Sentences: up to and including ". " (or the end).
	var sentences [][2]int
	start := 0
	for i := 0; i < len(content); i++ {
		if content[i] == '.' && (i+1 == len(content) || content[i+1] == ' ') {
			sentences = append(sentences, [2]int{start, i + 1})
			start = i + 1
		}
	}
	if start < len(content) {
		sentences = append(sentences, [2]int{start, len(content)})
	}
	var frags []string
	for _, s := range sentences {
		if len(frags) == maxFrags {
			break
		}
		end := s[1]
		if end-s[0] > size {
			// Cut at the first space after fragment_size.
			if i := strings.IndexByte(content[s[0]+size:s[1]], ' '); i >= 0 {
				end = s[0] + size + i
			}
		}
		var in [][2]int
		for _, r := range ranges {
			if r[0] >= s[0] && r[1] <= end {
				in = append(in, r)
			}
		}
		if len(in) == 0 {
			continue
		}
		slices.SortFunc(in, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
		var b strings.Builder
		pos := s[0]
		for _, r := range in {
			if r[0] < pos {
				continue
			}
			b.WriteString(htmlEncode(content[pos:r[0]]))
			b.WriteString("<b>" + htmlEncode(content[r[0]:r[1]]) + "</b>")
			pos = r[1]
		}
		b.WriteString(htmlEncode(content[pos:end]))
		frags = append(frags, b.String())
	}
	return frags
}

// htmlEncode escapes like OpenSearch's html highlight encoder.
func htmlEncode(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#x27;", "/", "&#x2F;").Replace(s)
}

// emuMeanAgg evaluates MeanContentVector's aggregation over the sampled
// documents: a nested aggregation over the passages, then the scripts'
// sum of the vectors of length params.dim (in float64, document by
// document, passage by passage), which it checks are the package's.
func emuMeanAgg(docs []*emuDoc, spec map[string]any) (map[string]any, error) {
	subs, _ := spec["aggs"].(map[string]any)
	if len(subs) != 1 || len(spec) != 2 {
		return nil, fmt.Errorf("unsupported sampler aggregation %v", spec)
	}
	out := map[string]any{"doc_count": len(docs)}
	for nname, nraw := range subs {
		nspec := nraw.(map[string]any)
		path, _ := nspec["nested"].(map[string]any)["path"].(string)
		msubs, _ := nspec["aggs"].(map[string]any)
		if path == "" || len(msubs) != 1 {
			return nil, fmt.Errorf("unsupported nested aggregation %v", nspec)
		}
		for mname, mraw := range msubs {
			sm, _ := mraw.(map[string]any)["scripted_metric"].(map[string]any)
			if sm["init_script"] != meanInit || sm["map_script"] != meanMap || sm["combine_script"] != meanCombine || sm["reduce_script"] != meanReduce {
				return nil, fmt.Errorf("unsupported scripted_metric %v", sm)
			}
			params := sm["params"].(map[string]any)
			field, _ := params["field"].(string)
			sub, ok := strings.CutPrefix(field, path+".")
			if !ok {
				return nil, fmt.Errorf("scripted_metric field %s is not under the nested path %s", field, path)
			}
			dim := int(num(params["dim"]))
			sum := make([]float64, dim)
			var n, passages int64
			for _, d := range docs {
				objs, _ := d.src[path].([]any)
				for _, o := range objs {
					passages++
					v, _ := o.(map[string]any)[sub].([]any)
					if len(v) != dim {
						continue
					}
					for i, x := range v {
						sum[i] += float64(float32(num(x)))
					}
					n++
				}
			}
			sumOut := make([]any, dim)
			for i, x := range sum {
				sumOut[i] = x
			}
			out[nname] = map[string]any{"doc_count": passages, mname: map[string]any{"value": map[string]any{"sum": sumOut, "n": n}}}
		}
	}
	return out, nil
}
