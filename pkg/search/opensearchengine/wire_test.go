package opensearchengine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// These tests check the wire protocol against a fake OpenSearch served by
// httptest: the requests the engine sends (paths, parameters, NDJSON) and
// how it reads the answers (versions, conflicts, retries, errors,
// timeouts). The fake implements external versioning the way the
// OpenSearch documentation describes it, nothing more: it does not search,
// analyse or rank, and passing here says nothing about how a real
// OpenSearch answers the queries. That is the job of the integration suite
// (integration_test.go, run with OPENSEARCH_URL), which these tests do not
// replace.

type fakeDoc struct {
	version int64
	deleted bool // a tombstone
}

type fakeOS struct {
	t       *testing.T
	mu      sync.Mutex
	version string
	index   string
	// exists: the alias index ("docs") points at "docs-v1", or, with
	// legacy, "docs" is a concrete index made before versioned indexes.
	exists  bool
	legacy  bool
	created []byte // body of the last create-index request
	// dynamic: the index exists with dynamic mappings (auto-created by a
	// write), not the engine's.
	dynamic bool
	// prePassages: the index has the mapping of before passages (one
	// content_vector).
	prePassages bool
	// meta is the mapping's _meta (JSON), from the create body or a put
	// mapping.
	meta string
	docs map[string]*fakeDoc
	// failures scripts answers: path prefix → statuses returned (then
	// removed) before the request is served normally.
	failures map[string][]int
	// itemFailures: document id → statuses its bulk item gets first.
	itemFailures map[string][]int
	// searchAnswer, when set, answers _search.
	searchAnswer func(body map[string]any) (int, string)
	searchDelay  time.Duration
	requests     []string // "METHOD path?query"
	bulkBodies   [][]byte
	searchBodies []map[string]any
}

func newFakeOS(t *testing.T) (*fakeOS, *httptest.Server) {
	f := &fakeOS{
		t: t, version: "3.1.0", index: "docs",
		docs: map[string]*fakeDoc{}, failures: map[string][]int{}, itemFailures: map[string][]int{},
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeOS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI())
	for prefix, statuses := range f.failures {
		if strings.HasPrefix(r.Method+" "+r.URL.Path, prefix) && len(statuses) > 0 {
			f.failures[prefix] = statuses[1:]
			writeJSON(w, statuses[0], fmt.Sprintf(`{"error":{"type":"injected","reason":"status %d"},"status":%d}`, statuses[0], statuses[0]))
			return
		}
	}
	path := r.URL.Path
	idx := "/" + f.index
	switch {
	case r.Method == http.MethodGet && path == "/":
		writeJSON(w, 200, fmt.Sprintf(`{"name":"n","version":{"distribution":"opensearch","number":%q}}`, f.version))
	case r.Method == http.MethodGet && path == idx+"/_mapping":
		if !f.exists {
			writeJSON(w, 404, `{"error":{"type":"index_not_found_exception","reason":"no such index [docs]"},"status":404}`)
			return
		}
		concrete := f.index + "-v1"
		if f.legacy {
			concrete = f.index
		}
		if f.dynamic {
			writeJSON(w, 200, `{"`+concrete+`":{"mappings":{"properties":{"content":{"type":"text"},"content_vector":{"type":"float"}}}}}`)
			return
		}
		meta := ""
		if f.meta != "" {
			meta = `"_meta":` + f.meta + `,`
		}
		if f.prePassages {
			writeJSON(w, 200, `{"`+concrete+`":{"mappings":{`+meta+`"properties":{"content_vector":{"type":"knn_vector","dimension":4},"metadata_vector":{"type":"knn_vector","dimension":3}}}}}`)
			return
		}
		writeJSON(w, 200, `{"`+concrete+`":{"mappings":{`+meta+`"properties":{"content_passages":{"type":"nested","properties":{"vector":{"type":"knn_vector","dimension":4}}},"metadata_vector":{"type":"knn_vector","dimension":3}}}}}`)
	case r.Method == http.MethodPut && path == idx+"/_mapping":
		var m struct {
			Meta json.RawMessage `json:"_meta"`
		}
		if !f.exists || json.Unmarshal(body, &m) != nil || m.Meta == nil {
			writeJSON(w, 400, `{"error":{"type":"fake","reason":"put mapping"},"status":400}`)
			return
		}
		f.meta = string(m.Meta)
		writeJSON(w, 200, `{"acknowledged":true}`)
	case r.Method == http.MethodPut && path == idx+"-v1":
		if f.exists {
			writeJSON(w, 400, `{"error":{"type":"resource_already_exists_exception","reason":"index [docs-v1] already exists"},"status":400}`)
			return
		}
		var m struct {
			Mappings struct {
				Meta json.RawMessage `json:"_meta"`
			} `json:"mappings"`
		}
		json.Unmarshal(body, &m)
		f.exists, f.created, f.dynamic, f.prePassages, f.meta = true, body, false, false, string(m.Mappings.Meta)
		writeJSON(w, 200, `{"acknowledged":true,"shards_acknowledged":true,"index":"docs-v1"}`)
	case r.Method == http.MethodPost && path == idx+"/_bulk":
		f.bulk(w, r, body)
	case strings.HasPrefix(path, idx+"/_doc/"):
		f.doc(w, r, strings.TrimPrefix(path, idx+"/_doc/"))
	case r.Method == http.MethodGet && path == idx+"/_count":
		n := 0
		for _, d := range f.docs {
			if !d.deleted {
				n++
			}
		}
		writeJSON(w, 200, fmt.Sprintf(`{"count":%d,"_shards":{"total":1,"successful":1,"failed":0}}`, n))
	case r.Method == http.MethodPost && path == idx+"/_search":
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			writeJSON(w, 400, `{"error":{"type":"parse_exception","reason":"bad json"},"status":400}`)
			return
		}
		f.searchBodies = append(f.searchBodies, m)
		if f.searchDelay > 0 {
			f.mu.Unlock()
			select {
			case <-time.After(f.searchDelay):
			case <-r.Context().Done():
			}
			f.mu.Lock()
		}
		status, answer := 200, `{"timed_out":false,"_shards":{"total":1,"successful":1,"failed":0},"hits":{"total":{"value":0,"relation":"eq"},"hits":[]}}`
		if f.searchAnswer != nil {
			status, answer = f.searchAnswer(m)
		}
		writeJSON(w, status, answer)
	default:
		writeJSON(w, 400, fmt.Sprintf(`{"error":{"type":"fake","reason":"unexpected %s %s"},"status":400}`, r.Method, path))
	}
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// bulk applies index actions with external versioning: stored only when
// the version is greater than the stored one (live or tombstone).
func (f *fakeOS) bulk(w http.ResponseWriter, r *http.Request, body []byte) {
	if ct := r.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		f.t.Errorf("bulk Content-Type %q", ct)
	}
	f.bulkBodies = append(f.bulkBodies, body)
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 64<<20)
	var items []string
	for sc.Scan() {
		var action map[string]map[string]any
		if err := json.Unmarshal(sc.Bytes(), &action); err != nil {
			f.t.Errorf("bulk action line: %v", err)
			return
		}
		meta, ok := action["index"]
		if !ok {
			f.t.Errorf("bulk action %v is not index", action)
			return
		}
		if !sc.Scan() {
			f.t.Errorf("bulk action without source")
			return
		}
		var src map[string]any
		if err := json.Unmarshal(sc.Bytes(), &src); err != nil {
			f.t.Errorf("bulk source line: %v", err)
		}
		id, _ := meta["_id"].(string)
		vt := meta["version_type"]
		if vt != "external" && vt != "external_gte" {
			f.t.Errorf("bulk item %s: version_type %v", id, vt)
		}
		ver := int64(meta["version"].(float64))
		if st := f.itemFailures[id]; len(st) > 0 {
			f.itemFailures[id] = st[1:]
			items = append(items, fmt.Sprintf(`{"index":{"_index":"docs","_id":%q,"status":%d,"error":{"type":"es_rejected_execution_exception","reason":"rejected"}}}`, id, st[0]))
			continue
		}
		cur := f.docs[id]
		if cur != nil && (ver < cur.version || ver == cur.version && vt == "external") {
			items = append(items, fmt.Sprintf(`{"index":{"_index":"docs","_id":%q,"status":409,"error":{"type":"version_conflict_engine_exception","reason":"[%s]: version conflict, current version [%d] is higher or equal to the one provided [%d]"}}}`, id, id, cur.version, ver))
			continue
		}
		status := 201
		if cur != nil && !cur.deleted {
			status = 200
		}
		f.docs[id] = &fakeDoc{version: ver}
		items = append(items, fmt.Sprintf(`{"index":{"_index":"docs","_id":%q,"_version":%d,"result":"created","status":%d}}`, id, ver, status))
	}
	writeJSON(w, 200, `{"took":1,"errors":true,"items":[`+strings.Join(items, ",")+`]}`)
}

func (f *fakeOS) doc(w http.ResponseWriter, r *http.Request, id string) {
	cur := f.docs[id]
	switch r.Method {
	case http.MethodGet:
		if r.URL.Query().Get("_source") != "false" {
			f.t.Errorf("GET _doc without _source=false")
		}
		if cur == nil || cur.deleted {
			writeJSON(w, 404, fmt.Sprintf(`{"_index":"docs","_id":%q,"found":false}`, id))
			return
		}
		writeJSON(w, 200, fmt.Sprintf(`{"_index":"docs","_id":%q,"_version":%d,"_seq_no":1,"_primary_term":1,"found":true}`, id, cur.version))
	case http.MethodDelete:
		q := r.URL.Query()
		if q.Get("version_type") != "external_gte" {
			f.t.Errorf("DELETE version_type %q", q.Get("version_type"))
		}
		ver, err := strconv.ParseInt(q.Get("version"), 10, 64)
		if err != nil {
			f.t.Errorf("DELETE version %q", q.Get("version"))
		}
		if cur != nil && ver < cur.version {
			writeJSON(w, 409, fmt.Sprintf(`{"error":{"type":"version_conflict_engine_exception","reason":"[%s]: version conflict"},"status":409}`, id))
			return
		}
		f.docs[id] = &fakeDoc{version: ver, deleted: true}
		if cur == nil || cur.deleted {
			writeJSON(w, 404, fmt.Sprintf(`{"_index":"docs","_id":%q,"_version":%d,"result":"not_found"}`, id, ver))
			return
		}
		writeJSON(w, 200, fmt.Sprintf(`{"_index":"docs","_id":%q,"_version":%d,"result":"deleted"}`, id, ver))
	default:
		writeJSON(w, 405, `{}`)
	}
}

// set changes the fake's script under its lock.
func (f *fakeOS) set(fn func(f *fakeOS)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeOS) setAnswer(fn func(map[string]any) (int, string)) {
	f.set(func(f *fakeOS) { f.searchAnswer = fn })
}

func (f *fakeOS) bulks() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.bulkBodies...)
}

func (f *fakeOS) version1() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.docs["1"].version
}

// bodies returns the search bodies received so far.
func (f *fakeOS) bodies() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.searchBodies...)
}

func (f *fakeOS) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

func newTestEngine(t *testing.T, srv *httptest.Server, mod func(*Config)) *Engine {
	t.Helper()
	cfg := Config{
		Addresses: []string{srv.URL}, Index: "docs", Dimensions: 4, MetadataDimensions: 3,
		Refresh: RefreshWaitFor, RetryBackoff: time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// New on an empty cluster creates the first versioned index together with
// the alias in one request, so the alias never lacks an index (a write to
// a missing name would auto-create one with dynamic mappings). Where the
// alias, or a concrete index of that name made before versioned indexes,
// exists, New creates nothing and uses it.
func TestWireNewCreatesIndex(t *testing.T) {
	tests := []struct {
		name           string
		exists, legacy bool
		wantPut        string // the create-index request, "" for none
	}{
		{name: "empty cluster", wantPut: "PUT /docs-v1"},
		{name: "alias exists", exists: true},
		{name: "concrete index from before", exists: true, legacy: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := newFakeOS(t)
			f.set(func(f *fakeOS) { f.exists, f.legacy = tc.exists, tc.legacy })
			newTestEngine(t, srv, nil)
			var puts []string
			for _, r := range f.log() {
				if strings.HasPrefix(r, "PUT") || strings.HasPrefix(r, "DELETE") || strings.HasPrefix(r, "POST /_aliases") {
					puts = append(puts, r)
				}
			}
			if tc.wantPut == "" {
				if len(puts) != 0 {
					t.Fatalf("index management requests %v, want none", puts)
				}
				return
			}
			if len(puts) != 1 || puts[0] != tc.wantPut {
				t.Fatalf("index management requests %v, want [%s]", puts, tc.wantPut)
			}
			var created map[string]any
			if err := json.Unmarshal(f.created, &created); err != nil {
				t.Fatalf("create body: %v", err)
			}
			want := IndexBody(testConfigFor("docs"))
			want["aliases"] = obj{"docs": obj{}}
			if !jsonEqual(created, want) {
				t.Errorf("create-index body is not IndexBody with the alias docs:\n%v", created)
			}
			// A second engine finds the alias and checks its dimensions.
			before := len(f.log())
			newTestEngine(t, srv, nil)
			for _, r := range f.log()[before:] {
				if strings.HasPrefix(r, "PUT") {
					t.Errorf("index created twice: %s", r)
				}
			}
		})
	}
}

func testConfigFor(index string) Config {
	cfg := testConfig()
	cfg.Index = index
	return cfg
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestWireNewRefuses(t *testing.T) {
	t.Run("old version", func(t *testing.T) {
		f, srv := newFakeOS(t)
		f.set(func(f *fakeOS) { f.version = "2.19.1" })
		_, err := New(context.Background(), Config{Addresses: []string{srv.URL}, Index: "docs", Dimensions: 4})
		if err == nil || !strings.Contains(err.Error(), "too old") {
			t.Fatalf("err = %v, want too old", err)
		}
	})
	t.Run("dimension mismatch", func(t *testing.T) {
		f, srv := newFakeOS(t)
		f.set(func(f *fakeOS) { f.exists = true })
		_, err := New(context.Background(), Config{Addresses: []string{srv.URL}, Index: "docs", Dimensions: 8, MetadataDimensions: 3})
		if err == nil || !strings.Contains(err.Error(), "4-dimensional content_passages.vector") {
			t.Fatalf("err = %v, want a dimension mismatch", err)
		}
	})
	t.Run("index from before passages", func(t *testing.T) {
		f, srv := newFakeOS(t)
		f.set(func(f *fakeOS) { f.exists, f.prePassages = true, true })
		_, err := New(context.Background(), Config{Addresses: []string{srv.URL}, Index: "docs", Dimensions: 4, MetadataDimensions: 3})
		if err == nil || !strings.Contains(err.Error(), "created before content passages") || !strings.Contains(err.Error(), "OPENSEARCH_INDEX") {
			t.Fatalf("err = %v, want the index refused as older than passages", err)
		}
	})
	t.Run("bad config", func(t *testing.T) {
		for _, cfg := range []Config{
			{Index: "docs", Dimensions: 4},
			{Addresses: []string{"http://x"}, Index: "docs"},
			{Addresses: []string{"http://x"}, Index: "Docs", Dimensions: 4},
			{Addresses: []string{"http://x"}, Index: "a/b", Dimensions: 4},
			{Addresses: []string{"http://x"}, Dimensions: 4, Refresh: "sometimes"},
		} {
			if _, err := New(context.Background(), cfg); err == nil {
				t.Errorf("New(%+v) succeeded", cfg)
			}
		}
	})
}

func doc(id, rev int64) engine.Document {
	return engine.Document{ID: id, Rev: rev, GroupIDs: []int64{1}, Content: "text " + strconv.FormatInt(id, 10)}
}

func TestWireUpsertExternalVersions(t *testing.T) {
	f, srv := newFakeOS(t)
	e := newTestEngine(t, srv, nil)
	ctx := context.Background()

	wr, err := e.Upsert(ctx, []engine.Document{doc(1, 5), doc(2, 1)})
	if err != nil || wr != (engine.WriteResult{Written: 2}) {
		t.Fatalf("first upsert = %+v, %v", wr, err)
	}
	// Same revision and older revision are stale (409 from OpenSearch),
	// a newer one is written.
	wr, err = e.Upsert(ctx, []engine.Document{doc(1, 5), doc(1, 4), doc(2, 2)})
	if err != nil || wr != (engine.WriteResult{Written: 1, Stale: 2}) {
		t.Fatalf("second upsert = %+v, %v", wr, err)
	}
	if rev, ok, err := e.Revision(ctx, 1); err != nil || !ok || rev != 5 {
		t.Fatalf("Revision(1) = %d %v %v", rev, ok, err)
	}
	if rev, ok, err := e.Revision(ctx, 2); err != nil || !ok || rev != 2 {
		t.Fatalf("Revision(2) = %d %v %v", rev, ok, err)
	}
	if _, ok, err := e.Revision(ctx, 3); err != nil || ok {
		t.Fatalf("Revision(3) = %v %v, want absent", ok, err)
	}
	for _, r := range f.log() {
		if strings.Contains(r, "_bulk") && !strings.Contains(r, "refresh=wait_for") {
			t.Errorf("bulk without the refresh policy: %s", r)
		}
	}
}

func TestWireUpsertDuplicatesInBatch(t *testing.T) {
	f, srv := newFakeOS(t)
	e := newTestEngine(t, srv, nil)
	// The newest revision of an id wins whatever the order; the others
	// are stale and never sent.
	wr, err := e.Upsert(context.Background(), []engine.Document{doc(1, 3), doc(1, 7), doc(2, 1), doc(1, 5)})
	if err != nil || wr != (engine.WriteResult{Written: 2, Stale: 2}) {
		t.Fatalf("upsert = %+v, %v", wr, err)
	}
	if got := f.version1(); got != 7 {
		t.Errorf("stored version %d, want 7", got)
	}
	if n := bytes.Count(f.bulks()[0], []byte("\n")); n != 4 {
		t.Errorf("bulk body has %d lines, want 4 (2 documents)", n)
	}
}

func TestWireUpsertRetriesRejectedItems(t *testing.T) {
	f, srv := newFakeOS(t)
	e := newTestEngine(t, srv, nil)
	f.set(func(f *fakeOS) { f.itemFailures["2"] = []int{429, 503} })
	wr, err := e.Upsert(context.Background(), []engine.Document{doc(1, 1), doc(2, 1), doc(3, 1)})
	if err != nil || wr != (engine.WriteResult{Written: 3}) {
		t.Fatalf("upsert = %+v, %v", wr, err)
	}
	if len(f.bulks()) != 3 {
		t.Fatalf("%d bulk requests, want 3 (the rejected item resent twice)", len(f.bulks()))
	}
	if !bytes.Contains(f.bulks()[2], []byte(`"_id":"2"`)) || bytes.Contains(f.bulks()[2], []byte(`"_id":"1"`)) {
		t.Errorf("retry body %s: want only document 2", f.bulks()[2])
	}

	// Rejected more often than MaxRetries: an error, with the counts.
	f.set(func(f *fakeOS) { f.itemFailures["4"] = []int{429, 429, 429, 429, 429} })
	wr, err = e.Upsert(context.Background(), []engine.Document{doc(4, 1), doc(5, 1)})
	if err == nil || !strings.Contains(err.Error(), "document 4: 429") || wr != (engine.WriteResult{Written: 1}) {
		t.Fatalf("upsert = %+v, %v; want document 4 failing", wr, err)
	}
}

func TestWireUpsertItemErrorsSurface(t *testing.T) {
	f, srv := newFakeOS(t)
	e := newTestEngine(t, srv, nil)
	f.set(func(f *fakeOS) { f.itemFailures["2"] = []int{400} })
	wr, err := e.Upsert(context.Background(), []engine.Document{doc(1, 1), doc(2, 1)})
	if err == nil || !strings.Contains(err.Error(), "1 of 2 documents were not indexed") || wr.Written != 1 {
		t.Fatalf("upsert = %+v, %v", wr, err)
	}
	// Vectors of the wrong length are refused before anything is sent.
	bad := doc(3, 1)
	bad.ContentVectors = [][]float32{{1, 2, 3, 4}, {1, 2}}
	n := len(f.bulks())
	if _, err := e.Upsert(context.Background(), []engine.Document{bad}); err == nil {
		t.Fatal("upsert of a 2-dimensional passage succeeded")
	}
	if len(f.bulks()) != n {
		t.Error("a bulk request was sent")
	}
}

func TestWireTransientStatusesRetried(t *testing.T) {
	f, srv := newFakeOS(t)
	e := newTestEngine(t, srv, nil)
	f.set(func(f *fakeOS) { f.failures["POST /docs/_bulk"] = []int{429, 503} })
	f.set(func(f *fakeOS) { f.failures["POST /docs/_search"] = []int{502} })
	if wr, err := e.Upsert(context.Background(), []engine.Document{doc(1, 1)}); err != nil || wr.Written != 1 {
		t.Fatalf("upsert after 429, 503 = %+v, %v", wr, err)
	}
	if _, err := e.Search(context.Background(), request(t, `{}`)); err != nil {
		t.Fatalf("search after 502: %v", err)
	}
	// A failure that outlasts the retries is an error naming the status.
	f.set(func(f *fakeOS) { f.failures["POST /docs/_search"] = []int{503, 503, 503, 503, 503} })
	_, err := e.Search(context.Background(), request(t, `{}`))
	var rerr *ResponseError
	if !errors.As(err, &rerr) || rerr.Status != 503 || !rerr.Retryable() {
		t.Fatalf("search after persistent 503: %v", err)
	}
	// 500 is not retried.
	before := len(f.log())
	f.set(func(f *fakeOS) { f.failures["POST /docs/_search"] = []int{500} })
	_, err = e.Search(context.Background(), request(t, `{}`))
	if !errors.As(err, &rerr) || rerr.Status != 500 || rerr.Type != "injected" {
		t.Fatalf("search after 500: %v", err)
	}
	if n := len(f.log()) - before; n != 1 {
		t.Errorf("500 sent %d requests, want 1", n)
	}
}

func TestWireDeleteHonoursRevisionsAndTombstones(t *testing.T) {
	f, srv := newFakeOS(t)
	e := newTestEngine(t, srv, nil)
	ctx := context.Background()
	e.Upsert(ctx, []engine.Document{doc(1, 5)})

	// An older revision does not delete (409 is not an error).
	if err := e.Delete(ctx, 1, 4); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := e.Revision(ctx, 1); !ok {
		t.Fatal("deleted by an older revision")
	}
	// The same revision deletes (external_gte).
	if err := e.Delete(ctx, 1, 5); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := e.Revision(ctx, 1); ok {
		t.Fatal("not deleted")
	}
	// The tombstone rejects the same revision again.
	if wr, err := e.Upsert(ctx, []engine.Document{doc(1, 5)}); err != nil || wr.Stale != 1 {
		t.Fatalf("upsert over the tombstone = %+v, %v", wr, err)
	}
	// Deleting an absent document is not an error.
	if err := e.Delete(ctx, 99, 1); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.log() {
		if strings.HasPrefix(r, "DELETE /docs/_doc/") && !strings.Contains(r, "refresh=wait_for") {
			t.Errorf("delete without the refresh policy: %s", r)
		}
	}
}

func TestWireDeleteIndexMissing(t *testing.T) {
	f, srv := newFakeOS(t)
	e := newTestEngine(t, srv, nil)
	f.set(func(f *fakeOS) { f.failures["DELETE /docs/_doc/"] = []int{404} })
	if err := e.Delete(context.Background(), 1, 1); err == nil {
		t.Fatal("delete answered index_not_found succeeded")
	}
}

func TestWireCountReturnsIndexedDocuments(t *testing.T) {
	_, srv := newFakeOS(t)
	e := newTestEngine(t, srv, nil)
	ctx := context.Background()
	e.Upsert(ctx, []engine.Document{doc(1, 1), doc(2, 1)})
	if n, err := e.Count(ctx); err != nil || n != 2 {
		t.Fatalf("Count = %d, %v", n, err)
	}
}

func TestWireClosedEngineRefusesEveryCall(t *testing.T) {
	_, srv := newFakeOS(t)
	e := newTestEngine(t, srv, nil)
	e.Close()
	ctx := context.Background()
	if _, err := e.Upsert(ctx, nil); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Upsert: %v", err)
	}
	if err := e.Delete(ctx, 1, 1); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Delete: %v", err)
	}
	if _, _, err := e.Revision(ctx, 1); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Revision: %v", err)
	}
	if _, err := e.Search(ctx, request(t, `{}`)); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Search: %v", err)
	}
	if _, err := e.Count(ctx); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Count: %v", err)
	}
	if err := e.Reset(ctx); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Reset: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// request builds an engine.Request for a body, caller in group 1.
func request(t *testing.T, body string) engine.Request {
	t.Helper()
	return buildRequest(t, searchCase{name: "wire", body: body, groups: []int64{1}})
}

func TestWireSearchTimeouts(t *testing.T) {
	f, srv := newFakeOS(t)
	e := newTestEngine(t, srv, func(c *Config) { c.SearchTimeout = 2 * time.Second })

	// The server reports a timeout: partial results are an error.
	f.setAnswer(func(map[string]any) (int, string) {
		return 200, `{"timed_out":true,"_shards":{"total":1,"successful":1,"failed":0},"hits":{"total":{"value":1,"relation":"eq"},"hits":[]}}`
	})
	_, err := e.Search(context.Background(), request(t, `{}`))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed_out answer: %v, want DeadlineExceeded", err)
	}
	if got := f.bodies()[0]["timeout"]; got != "2000ms" {
		t.Errorf("timeout = %v, want 2000ms (SearchTimeout)", got)
	}

	// ctx's deadline, when sooner, gives the server-side timeout, and
	// ends the request.
	f.set(func(f *fakeOS) { f.searchAnswer = nil })
	f.set(func(f *fakeOS) { f.searchDelay = 5 * time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = e.Search(ctx, request(t, `{}`))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow server: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("search returned after %v", d)
	}
	got, _ := f.bodies()[1]["timeout"].(string)
	ms, _ := strconv.Atoi(strings.TrimSuffix(got, "ms"))
	if ms < 1 || ms > 300 {
		t.Errorf("timeout = %q, want at most the 300ms left", got)
	}
}

func TestWireSearchShardFailure(t *testing.T) {
	f, srv := newFakeOS(t)
	e := newTestEngine(t, srv, nil)
	f.setAnswer(func(map[string]any) (int, string) {
		return 200, `{"timed_out":false,"_shards":{"total":2,"successful":1,"failed":1,"failures":[{"shard":1,"reason":{"type":"x","reason":"boom"}}]},"hits":{"total":{"value":0,"relation":"eq"},"hits":[]}}`
	})
	_, err := e.Search(context.Background(), request(t, `{}`))
	if err == nil || !strings.Contains(err.Error(), "1 of 2 shards") {
		t.Fatalf("err = %v", err)
	}
}

// TestWireSearchModes checks the requests of each mode and how answers
// become results.
func TestWireSearchModes(t *testing.T) {
	f, srv := newFakeOS(t)
	e := newTestEngine(t, srv, nil)
	ctx := context.Background()

	t.Run("fts", func(t *testing.T) {
		f.set(func(f *fakeOS) { f.searchBodies = nil })
		f.setAnswer(func(map[string]any) (int, string) {
			return 200, `{"timed_out":false,"_shards":{"total":1,"successful":1,"failed":0},"hits":{"total":{"value":42,"relation":"eq"},"hits":[
				{"_id":"7","_score":2.5,"_source":{"id":7,"doc_type":"Invoice","date":"2024-01-02T03:04:05.123456789Z","filesbelongto":[3,9],"privileged":true},
				 "highlight":{"content":["a <b>budget</b>\nline &amp; more"]}},
				{"_id":"3","_score":1.25,"_source":{"id":3}}]}}`
		})
		req := request(t, `{"where": {"fts": {"query": "budget"}}, "select": ["doc_type", "date", "filesbelongto", "privileged", "description", "_score"], "options": {"include_highlights": true}}`)
		res, err := e.Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != 42 || len(res.Hits) != 2 {
			t.Fatalf("result %+v", res)
		}
		h := res.Hits[0]
		if h.ID != 7 || h.Score == nil || *h.Score != 2.5 {
			t.Errorf("hit %+v", h)
		}
		wantTime := time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC)
		if got := h.Fields["date"].(time.Time); !got.Equal(wantTime) {
			t.Errorf("date %v", got)
		}
		if got := h.Fields["filesbelongto"].([]int64); len(got) != 2 || got[1] != 9 {
			t.Errorf("filesbelongto %v", got)
		}
		if h.Fields["doc_type"] != "Invoice" || h.Fields["privileged"] != true {
			t.Errorf("fields %v", h.Fields)
		}
		if v, ok := h.Fields["description"]; !ok || v != nil {
			t.Errorf("absent description: %v %v", v, ok)
		}
		if len(h.Highlights) != 1 || h.Highlights[0] != "a <b>budget</b> line &amp; more" {
			t.Errorf("highlights %q", h.Highlights)
		}
		if res.Hits[1].Highlights == nil || len(res.Hits[1].Highlights) != 0 {
			t.Errorf("hit without fragments: highlights %#v, want empty", res.Hits[1].Highlights)
		}
		if len(f.bodies()) != 1 {
			t.Errorf("%d searches", len(f.bodies()))
		}
	})

	t.Run("metadata scores are nil", func(t *testing.T) {
		f.setAnswer(func(map[string]any) (int, string) {
			return 200, `{"timed_out":false,"_shards":{"total":1,"successful":1,"failed":0},"hits":{"total":{"value":1,"relation":"eq"},"hits":[{"_id":"7","_score":1.0,"_source":{"id":7}}]}}`
		})
		res, err := e.Search(ctx, request(t, `{"where": {"eq": {"field": "doc_type", "value": "x"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		if res.Hits[0].Score != nil || res.Hits[0].Highlights != nil {
			t.Errorf("hit %+v", res.Hits[0])
		}
	})

	t.Run("vector only", func(t *testing.T) {
		f.set(func(f *fakeOS) { f.searchBodies = nil })
		// The k nearest, best first; the engine sorts them by date desc
		// (missing last, ties by id) and pages.
		f.setAnswer(func(map[string]any) (int, string) {
			return 200, `{"timed_out":false,"_shards":{"total":1,"successful":1,"failed":0},"hits":{"hits":[
				{"_id":"1","_score":0.9,"_source":{"id":1,"date":"2024-01-01T00:00:00Z"}},
				{"_id":"2","_score":0.8,"_source":{"id":2}},
				{"_id":"3","_score":0.7,"_source":{"id":3,"date":"2025-01-01T00:00:00Z"}},
				{"_id":"4","_score":0.6,"_source":{"id":4,"date":"2024-01-01T00:00:00Z"}},
				{"_id":"5","_score":0.5,"_source":{"id":5}}]}}`
		})
		req := request(t, `{"where": {"vector": {"target": "content", "query": "x"}}, "sort": [{"field": "date", "direction": "desc"}], "limit": 3, "offset": 1, "select": ["_score"]}`)
		res, err := e.Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		// Sorted: 3 (2025), 1, 4 (2024, by id), 2, 5 (missing, by id).
		var ids []int64
		for _, h := range res.Hits {
			ids = append(ids, h.ID)
		}
		if res.Total != 5 || fmt.Sprint(ids) != "[1 4 2]" {
			t.Errorf("total %d ids %v, want 5 [1 4 2]", res.Total, ids)
		}
		if s := res.Hits[0].Score; s == nil || *s != 0.9 {
			t.Errorf("score %v", s)
		}
		if len(f.bodies()) != 1 || f.bodies()[0]["size"] != float64(dsl.DefaultVectorK) {
			t.Errorf("search bodies %v", f.searchBodies)
		}
	})

	t.Run("fts+vector", func(t *testing.T) {
		f.set(func(f *fakeOS) { f.searchBodies = nil })
		f.setAnswer(func(body map[string]any) (int, string) {
			if _, ok := body["query"].(map[string]any)["nested"]; ok { // the knn search over passages
				return 200, `{"timed_out":false,"_shards":{"total":1,"successful":1,"failed":0},"hits":{"hits":[{"_id":"8","_score":0.9},{"_id":"2","_score":0.5}]}}`
			}
			return 200, `{"timed_out":false,"_shards":{"total":1,"successful":1,"failed":0},"hits":{"total":{"value":1,"relation":"eq"},"hits":[{"_id":"2","_score":3.5,"_source":{"id":2}}]}}`
		})
		req := request(t, `{"where": {"and": [{"vector": {"target": "content", "query": "x"}}, {"fts": {"query": "budget"}}]}}`)
		res, err := e.Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != 1 || len(res.Hits) != 1 || *res.Hits[0].Score != 3.5 {
			t.Errorf("result %+v", res)
		}
		if len(f.bodies()) != 2 {
			t.Fatalf("%d searches, want 2", len(f.bodies()))
		}
		step2, _ := json.Marshal(f.bodies()[1]["query"])
		if !strings.Contains(string(step2), `{"terms":{"id":[8,2]}}`) {
			t.Errorf("step 2 query %s lacks the ids of step 1", step2)
		}

		// No neighbour: no second search.
		f.set(func(f *fakeOS) { f.searchBodies = nil })
		f.setAnswer(func(map[string]any) (int, string) {
			return 200, `{"timed_out":false,"_shards":{"total":1,"successful":1,"failed":0},"hits":{"hits":[]}}`
		})
		res, err = e.Search(ctx, req)
		if err != nil || res.Total != 0 || len(res.Hits) != 0 || len(f.bodies()) != 1 {
			t.Errorf("empty step 1: %+v, %v, %d searches", res, err, len(f.bodies()))
		}
	})

	t.Run("bad query vector", func(t *testing.T) {
		req := request(t, `{"where": {"vector": {"target": "content", "query": "x"}}}`)
		req.QueryVector = []float32{1}
		if _, err := e.Search(ctx, req); err == nil {
			t.Error("a 1-dimensional query vector was accepted")
		}
		req.QueryVector = nil
		if _, err := e.Search(ctx, req); err == nil {
			t.Error("a missing query vector was accepted")
		}
	})
}

// A node that accepts a request and never answers fails the call after the
// request timeout instead of holding it for ever.
func TestHungNodeTimesOut(t *testing.T) {
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"version":{"distribution":"opensearch","number":"3.1.0"}}`))
			return
		}
		<-r.Context().Done()
	}))
	defer hung.Close()
	cfg, err := Config{Addresses: []string{hung.URL}, RequestTimeout: 200 * time.Millisecond, MaxRetries: -1, Dimensions: 4}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	c, err := newClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.do(context.Background(), http.MethodGet, "/docrepo/_count", nil, nil, "")
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("a hung node: %v after %v, want a timeout after about 200ms", err, time.Since(start))
	}
}

func TestWireEmbedderIsRecordedInMetaAndCached(t *testing.T) {
	ctx := context.Background()
	f, srv := newFakeOS(t)
	hash := embed.Identity{Kind: "hash", Model: "hash", Version: "v1", Dimensions: 4}
	e := newTestEngine(t, srv, func(c *Config) { c.Embedder = hash })
	// The index New creates records Config.Embedder in its _meta.
	var created struct {
		Mappings struct {
			Meta map[string]embed.Identity `json:"_meta"`
		} `json:"mappings"`
	}
	if err := json.Unmarshal(f.created, &created); err != nil || created.Mappings.Meta[metaEmbedder] != hash {
		t.Fatalf("create body _meta = %v (%v), want %v", created.Mappings.Meta, err, hash)
	}
	if got, ok, err := e.Embedder(ctx); !ok || err != nil || got != hash {
		t.Fatalf("Embedder = %v, %v, %v", got, ok, err)
	}
	// Read at most every embedderTTL: a second call sends nothing.
	n := len(f.log())
	if _, _, err := e.Embedder(ctx); err != nil || len(f.log()) != n {
		t.Errorf("second Embedder sent %v (%v)", f.log()[n:], err)
	}
	local := embed.Identity{Kind: "local", Model: "m", Version: "abc", Dimensions: 4}
	if err := e.SetEmbedder(ctx, local); err != nil {
		t.Fatal(err)
	}
	if got := f.log()[len(f.log())-1]; got != "PUT /docs/_mapping" {
		t.Errorf("SetEmbedder sent %s", got)
	}
	// Another engine (process) reads what was recorded.
	other := newTestEngine(t, srv, nil)
	if got, ok, err := other.Embedder(ctx); !ok || err != nil || got != local {
		t.Errorf("other engine: Embedder = %v, %v, %v, want %v", got, ok, err, local)
	}
}

// TestEmbedderAfterReset: Reset (a new versioned index behind the alias)
// records Config.Embedder in the new index and forgets the cached one; an
// engine without an embedder makes an index that records none.
func TestEmbedderAfterReset(t *testing.T) {
	ctx := context.Background()
	em := newEmulator()
	srv := httptest.NewServer(em)
	t.Cleanup(srv.Close)
	hash := embed.Identity{Kind: "hash", Model: "hash", Version: "v1", Dimensions: 4}
	cfg := aliasConfig(srv)
	cfg.Embedder = hash
	e, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	local := embed.Identity{Kind: "local", Model: "m", Version: "abc", Dimensions: 4}
	if err := e.SetEmbedder(ctx, local); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := e.Embedder(ctx); !ok || err != nil || got != local {
		t.Fatalf("after SetEmbedder: Embedder = %v, %v, %v, want %v", got, ok, err, local)
	}
	if err := e.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := e.Embedder(ctx); !ok || err != nil || got != hash {
		t.Errorf("after Reset: Embedder = %v, %v, %v, want %v", got, ok, err, hash)
	}
	other := newAliasEngine(t, srv) // no Config.Embedder
	if err := other.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := other.Embedder(ctx); ok || err != nil {
		t.Errorf("index without _meta: Embedder = %v, %v, %v", got, ok, err)
	}
}

func TestEmbedderOfMapping(t *testing.T) {
	a := `{"kind":"hash","model":"hash","version":"v1","dimensions":4}`
	b := `{"kind":"hash","model":"hash","version":"v2","dimensions":4}`
	for _, tc := range []struct {
		body    string
		ok, err bool
	}{
		{`{"docs":{"mappings":{"properties":{}}}}`, false, false},
		{`{"docs":{"mappings":{"_meta":{"docrepo_embedder":` + a + `}}}}`, true, false},
		{`{"v1":{"mappings":{"_meta":{"docrepo_embedder":` + a + `}}},"v2":{"mappings":{"_meta":{"docrepo_embedder":` + a + `}}}}`, true, false},
		{`{"v1":{"mappings":{"_meta":{"docrepo_embedder":` + a + `}}},"v2":{"mappings":{"_meta":{"docrepo_embedder":` + b + `}}}}`, false, true},
		{`{"v1":{"mappings":{"_meta":{"docrepo_embedder":` + a + `}}},"v2":{"mappings":{}}}`, false, true},
		{`{"docs":{"mappings":{"_meta":{"docrepo_embedder":7}}}}`, false, true},
	} {
		_, ok, err := embedderOfMapping([]byte(tc.body))
		if ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("%s: ok %v, err %v", tc.body, ok, err)
		}
	}
}
