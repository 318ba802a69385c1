package opensearchengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// These tests run the versioned indexes behind the alias (alias.go)
// against the emulator, which keeps indexes and aliases the way the
// OpenSearch documentation describes them: create with aliases, atomic
// POST /_aliases (remove_index first, must_exist), no delete through an
// alias, auto-creation of a missing index by a bulk write. What a real
// cluster does is the integration suite's job (TestIntegrationRebuildSwitchesTheAliasAndCleansUp).

// aliasConfig is the configuration of the engines of these tests.
func aliasConfig(srv *httptest.Server) Config {
	return Config{
		Addresses: []string{srv.URL}, Index: "docs", Dimensions: 4, MetadataDimensions: 4, Shards: 1,
		Refresh: RefreshWaitFor, RetryBackoff: time.Millisecond,
	}
}

func newAliasEngine(t *testing.T, srv *httptest.Server) *Engine {
	t.Helper()
	e, err := New(t.Context(), aliasConfig(srv))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// platypus returns documents first..last containing "platypus", at rev.
func platypus(first, last, rev int64) []engine.Document {
	var out []engine.Document
	for id := first; id <= last; id++ {
		out = append(out, engine.Document{ID: id, Rev: rev, GroupIDs: []int64{1}, Content: "platypus " + strconv.FormatInt(id, 10)})
	}
	return out
}

func upsert(t *testing.T, e engine.Engine, docs []engine.Document) {
	t.Helper()
	if _, err := e.Upsert(t.Context(), docs); err != nil {
		t.Fatalf("Upsert: %v", err)
	}
}

// found is the number of documents a search for "platypus" finds.
func found(t *testing.T, e engine.Engine) int64 {
	t.Helper()
	res, err := e.Search(t.Context(), buildRequest(t, searchCase{name: "platypus", body: `{"where": {"fts": {"query": "platypus"}}}`, unrestricted: true}))
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	return res.Total
}

// since returns the requests from the n-th on, as "METHOD path".
func since(em *emulator, n int) []string {
	var out []string
	for _, r := range em.log()[n:] {
		out = append(out, r.String())
	}
	return out
}

// aliasCalls returns the bodies of the POST /_aliases requests from the
// n-th request on.
func aliasCalls(t *testing.T, em *emulator, n int) []any {
	t.Helper()
	var out []any
	for _, r := range em.log()[n:] {
		if r.String() == "POST /_aliases" {
			var body any
			if err := json.Unmarshal(r.body, &body); err != nil {
				t.Fatal(err)
			}
			out = append(out, body)
		}
	}
	return out
}

// switchBody is the POST /_aliases body moving the alias docs from the
// index from (removed with remove_index when legacy) to the index to.
func switchBody(from, to string, legacy bool) any {
	remove := obj{"remove": obj{"index": from, "alias": "docs", "must_exist": true}}
	if legacy {
		remove = obj{"remove_index": obj{"index": from}}
	}
	var out any
	b, _ := json.Marshal(obj{"actions": []obj{remove, {"add": obj{"index": to, "alias": "docs"}}}})
	json.Unmarshal(b, &out)
	return out
}

// wantState checks the emulator's indexes and where the alias docs points.
func wantState(t *testing.T, em *emulator, indexes []string, aliasTo string) {
	t.Helper()
	names, aliases := em.state()
	if !slices.Equal(names, indexes) {
		t.Errorf("indexes %v, want %v", names, indexes)
	}
	if got := aliases["docs"]; !slices.Equal(got, []string{aliasTo}) {
		t.Errorf("alias docs points at %v, want [%s]", got, aliasTo)
	}
}

// put sends a request straight to the emulator (what an operator, an
// older docrepo or another process did).
func put(t *testing.T, srv *httptest.Server, method, path string, body any) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, srv.URL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d", method, path, res.StatusCode)
	}
}

// On a cluster without the index, New creates docs-v1 and the alias docs
// in one request, and everything goes through the alias.
func TestAliasCreatedWithTheFirstIndex(t *testing.T) {
	em := newEmulator()
	srv := httptest.NewServer(em)
	t.Cleanup(srv.Close)
	e := newAliasEngine(t, srv)
	wantState(t, em, []string{"docs-v1"}, "docs-v1")
	upsert(t, e, platypus(1, 3, 1))
	if n := found(t, e); n != 3 {
		t.Fatalf("found %d, want 3", n)
	}
	for _, r := range since(em, 0) {
		if strings.HasPrefix(r, "PUT") && r != "PUT /docs-v1" {
			t.Errorf("unexpected create %s", r)
		}
		if strings.HasPrefix(r, "POST /docs-v1") || strings.HasPrefix(r, "GET /docs-v1") {
			t.Errorf("%s: reads and writes should go through the alias", r)
		}
	}
}

// A rebuild writes a new index while searches and live writes go on
// through the alias to the current one; Commit moves the alias in one
// POST /_aliases (remove + add) and then deletes the old index.
func TestAliasRebuildSwitches(t *testing.T) {
	em := newEmulator()
	srv := httptest.NewServer(em)
	t.Cleanup(srv.Close)
	e := newAliasEngine(t, srv)
	upsert(t, e, platypus(1, 3, 1))

	g, err := e.NewGeneration(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if g.Index() != "docs-v2" {
		t.Fatalf("new index %s, want docs-v2", g.Index())
	}
	wantState(t, em, []string{"docs-v1", "docs-v2"}, "docs-v1")
	upsert(t, g.Engine(), platypus(1, 2, 1)) // the rebuild, half done
	upsert(t, e, platypus(4, 4, 1))          // a live write meanwhile
	if v1, v2 := em.liveDocs("docs-v1"), em.liveDocs("docs-v2"); v1 != 4 || v2 != 2 {
		t.Fatalf("documents: docs-v1 %d, docs-v2 %d; want 4 (live writes through the alias) and 2 (the rebuild's)", v1, v2)
	}
	before := len(em.log())
	if n := found(t, e); n != 4 {
		t.Fatalf("during the rebuild a search found %d, want the current index's 4", n)
	}
	if r := since(em, before); !slices.Equal(r, []string{"POST /docs/_search"}) {
		t.Fatalf("search during the rebuild sent %v, want it through the alias", r)
	}

	upsert(t, g.Engine(), platypus(3, 4, 1)) // the rebuild completes
	before = len(em.log())
	if err := g.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	calls := aliasCalls(t, em, before)
	if want := switchBody("docs-v1", "docs-v2", false); len(calls) != 1 || !jsonEqual(calls[0], want) {
		t.Fatalf("the switch sent %v, want one POST /_aliases %v", calls, want)
	}
	r := since(em, before)
	if i := slices.Index(r, "POST /_aliases"); i < 0 || !slices.Contains(r[i:], "DELETE /docs-v1") {
		t.Fatalf("requests of the commit %v: want the old index deleted after the switch", r)
	}
	wantState(t, em, []string{"docs-v2"}, "docs-v2")
	upsert(t, g.Engine(), platypus(5, 5, 1))
	if n := found(t, e); n != 5 {
		t.Fatalf("after the switch a search found %d, want the new index's 5", n)
	}
	g.Abandon() // after a commit: nothing
	wantState(t, em, []string{"docs-v2"}, "docs-v2")

	// The next rebuild takes the next version.
	g, err = e.NewGeneration(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if g.Index() != "docs-v3" {
		t.Fatalf("second rebuild into %s, want docs-v3", g.Index())
	}
}

// A rebuild that never switches leaves the alias on the complete old
// index; the index it made is deleted by Abandon or, after a crash, by
// the next rebuild. A switch whose answer is lost counts as made.
func TestAliasRebuildInterrupted(t *testing.T) {
	tests := []struct {
		name string
		// fail scripts POST /_aliases: status, and whether the switch was
		// made before the failure answered.
		status  int
		applied bool
		// crash: the process dies before Commit (no Commit, no Abandon).
		crash bool
		// wantSwitched: Commit reports success and the alias moved.
		wantSwitched bool
	}{
		{name: "crash before the switch", crash: true},
		{name: "switch refused", status: http.StatusInternalServerError},
		{name: "switch answer lost", status: http.StatusGatewayTimeout, applied: true, wantSwitched: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			em := newEmulator()
			srv := httptest.NewServer(em)
			t.Cleanup(srv.Close)
			e := newAliasEngine(t, srv)
			upsert(t, e, platypus(1, 3, 1))
			g, err := e.NewGeneration(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			upsert(t, g.Engine(), platypus(1, 1, 1))
			if !tc.crash {
				em.mu.Lock()
				em.fail = func(method, path string) (int, bool) {
					if method == http.MethodPost && path == "/_aliases" {
						return tc.status, tc.applied
					}
					return 0, false
				}
				em.mu.Unlock()
				err := g.Commit(t.Context())
				if tc.wantSwitched {
					if err != nil {
						t.Fatalf("Commit: %v, want success (the switch was made)", err)
					}
					g.Abandon()
					wantState(t, em, []string{"docs-v2"}, "docs-v2")
					return
				}
				if err == nil {
					t.Fatal("Commit succeeded though the switch failed")
				}
				wantState(t, em, []string{"docs-v1", "docs-v2"}, "docs-v1")
				g.Abandon()
				wantState(t, em, []string{"docs-v1"}, "docs-v1")
				em.mu.Lock()
				em.fail = nil
				em.mu.Unlock()
			} else {
				wantState(t, em, []string{"docs-v1", "docs-v2"}, "docs-v1")
			}
			if n := found(t, e); n != 3 {
				t.Fatalf("after the interrupted rebuild a search found %d, want the old index's 3", n)
			}
			// The next rebuild deletes what is left and completes.
			g, err = e.NewGeneration(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			wantState(t, em, []string{"docs-v1", g.Index()}, "docs-v1")
			upsert(t, g.Engine(), platypus(1, 3, 1))
			if err := g.Commit(t.Context()); err != nil {
				t.Fatal(err)
			}
			wantState(t, em, []string{g.Index()}, g.Index())
		})
	}
}

// A concrete index named like the alias (made before versioned indexes)
// is used as it is; the first rebuild replaces it with docs-v1 behind the
// alias, deleting it in the same POST /_aliases (remove_index + add).
func TestAliasLegacyIndex(t *testing.T) {
	em := newEmulator()
	srv := httptest.NewServer(em)
	t.Cleanup(srv.Close)
	put(t, srv, http.MethodPut, "/docs", IndexBody(aliasConfig(srv)))
	before := len(em.log())
	e := newAliasEngine(t, srv)
	for _, r := range since(em, before) {
		if !strings.HasPrefix(r, "GET") {
			t.Errorf("New on an existing index sent %s", r)
		}
	}
	upsert(t, e, platypus(1, 3, 1))
	if n := em.liveDocs("docs"); n != 3 {
		t.Fatalf("the concrete index holds %d documents, want 3", n)
	}

	g, err := e.NewGeneration(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if g.Index() != "docs-v1" {
		t.Fatalf("rebuild into %s, want docs-v1", g.Index())
	}
	upsert(t, g.Engine(), platypus(1, 2, 1))
	if n := found(t, e); n != 3 {
		t.Fatalf("during the rebuild a search found %d, want the old index's 3", n)
	}
	before = len(em.log())
	if err := g.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	calls := aliasCalls(t, em, before)
	if want := switchBody("docs", "docs-v1", true); len(calls) != 1 || !jsonEqual(calls[0], want) {
		t.Fatalf("the switch sent %v, want one POST /_aliases %v", calls, want)
	}
	wantState(t, em, []string{"docs-v1"}, "docs-v1")
	if n := found(t, e); n != 2 {
		t.Fatalf("after the switch the same engine found %d, want the new index's 2", n)
	}
	// A process started now finds the alias.
	newAliasEngine(t, srv)
	wantState(t, em, []string{"docs-v1"}, "docs-v1")
}

// Reset empties the index by switching the alias to a new, empty index:
// the alias exists throughout, the tombstones go with the old index.
func TestAliasResetSwitchesToAnEmptyIndexWithoutTombstones(t *testing.T) {
	tests := []struct {
		name    string
		legacy  bool
		wantNew string
	}{
		{name: "alias", wantNew: "docs-v2"},
		{name: "concrete index from before", legacy: true, wantNew: "docs-v1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			em := newEmulator()
			srv := httptest.NewServer(em)
			t.Cleanup(srv.Close)
			if tc.legacy {
				put(t, srv, http.MethodPut, "/docs", IndexBody(aliasConfig(srv)))
			}
			e := newAliasEngine(t, srv)
			upsert(t, e, platypus(1, 3, 2))
			if err := e.Delete(t.Context(), 3, 5); err != nil {
				t.Fatal(err)
			}
			before := len(em.log())
			if err := e.Reset(t.Context()); err != nil {
				t.Fatal(err)
			}
			if calls := aliasCalls(t, em, before); len(calls) != 1 {
				t.Fatalf("Reset sent %d POST /_aliases, want 1", len(calls))
			}
			wantState(t, em, []string{tc.wantNew}, tc.wantNew)
			if n, err := e.Count(t.Context()); err != nil || n != 0 {
				t.Fatalf("Count after Reset = %d, %v", n, err)
			}
			// No tombstone: an older revision of the deleted document is
			// accepted again.
			wr, err := e.Upsert(t.Context(), platypus(3, 3, 1))
			if err != nil || wr.Written != 1 {
				t.Fatalf("upsert after Reset = %+v, %v", wr, err)
			}
		})
	}
}

// If the new index disappears during the rebuild (another rebuild deleted
// it as unfinished) a write re-creates it with dynamic mappings; Commit
// refuses to put that index behind the alias.
func TestAliasRebuildRefusesAForeignIndex(t *testing.T) {
	em := newEmulator()
	srv := httptest.NewServer(em)
	t.Cleanup(srv.Close)
	e := newAliasEngine(t, srv)
	upsert(t, e, platypus(1, 3, 1))
	g, err := e.NewGeneration(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	put(t, srv, http.MethodDelete, "/"+g.Index(), nil)
	upsert(t, g.Engine(), platypus(1, 3, 1))
	err = g.Commit(t.Context())
	if !errors.Is(err, errForeignIndex) {
		t.Fatalf("Commit onto an auto-created index: %v, want errForeignIndex", err)
	}
	g.Abandon()
	wantState(t, em, []string{"docs-v1"}, "docs-v1")
	if n := found(t, e); n != 3 {
		t.Fatalf("found %d, want 3", n)
	}
}

// When the alias no longer points at the index the rebuild started from
// (someone else switched it meanwhile), the switch fails as a whole: the
// remove carries must_exist, so the add is not applied either and the
// alias never points at two indexes.
func TestAliasRebuildLosesToAnotherSwitch(t *testing.T) {
	em := newEmulator()
	srv := httptest.NewServer(em)
	t.Cleanup(srv.Close)
	e := newAliasEngine(t, srv)
	g, err := e.NewGeneration(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	put(t, srv, http.MethodPut, "/docs-v9", IndexBody(aliasConfig(srv)))
	put(t, srv, http.MethodPost, "/_aliases", switchBody("docs-v1", "docs-v9", false))
	if err := g.Commit(t.Context()); err == nil {
		t.Fatal("Commit succeeded though the alias had moved")
	}
	wantState(t, em, []string{"docs-v1", "docs-v2", "docs-v9"}, "docs-v9")
	g.Abandon()
	wantState(t, em, []string{"docs-v1", "docs-v9"}, "docs-v9")
}

// New refuses to guess when docs-v1 exists without the alias (an operator
// removed it): neither adopting nor replacing the index is safe.
func TestAliasMissingButIndexExists(t *testing.T) {
	em := newEmulator()
	srv := httptest.NewServer(em)
	t.Cleanup(srv.Close)
	put(t, srv, http.MethodPut, "/docs-v1", IndexBody(aliasConfig(srv)))
	_, err := New(context.Background(), aliasConfig(srv))
	if err == nil || !strings.Contains(err.Error(), "alias docs does not") {
		t.Fatalf("New = %v, want an error naming the missing alias", err)
	}
	wantIndexes, _ := em.state()
	if !slices.Equal(wantIndexes, []string{"docs-v1"}) {
		t.Fatalf("indexes %v: New changed them", wantIndexes)
	}
}

func TestVersionOfParsesOnlyVersionedIndexNames(t *testing.T) {
	tests := []struct {
		name, index string
		want        int
		ok          bool
	}{
		{name: "first", index: "docs-v1", want: 1, ok: true},
		{name: "large", index: "docs-v120", want: 120, ok: true},
		{name: "the alias itself", index: "docs"},
		{name: "no number", index: "docs-v"},
		{name: "leading zero", index: "docs-v01"},
		{name: "zero", index: "docs-v0"},
		{name: "another suffix", index: "docs-vector"},
		{name: "another alias's version", index: "docs-v1-v2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := versionOf("docs", tc.index)
			if n != tc.want || ok != tc.ok {
				t.Fatalf("versionOf(docs, %s) = %d, %v; want %d, %v", tc.index, n, ok, tc.want, tc.ok)
			}
		})
	}
}
