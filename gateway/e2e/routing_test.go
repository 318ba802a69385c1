package e2e

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestHeadServesEveryGetRoute: RFC 9110 §9.1 requires HEAD wherever GET
// is supported; it answers GET's status and headers without a body.
func TestHeadServesEveryGetRoute(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	res := u.uploadFile("h.txt", []byte("head"))
	for _, path := range []string{
		"/apiv2/pub/folders",
		fmt.Sprintf("/apiv2/pub/documents/%d", res.DocID),
		fmt.Sprintf("/apiv3/pub/documents/%d/versions", res.DocID),
		"/apiv2/pub/schema/fields",
		"/healthz",
		"/openapi.json",
	} {
		get := u.do("GET", path, nil)
		head := u.do("HEAD", path, nil)
		if head.Status != 200 || get.Status != 200 || len(head.Body) != 0 ||
			head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q (%d body bytes); GET: %d %q", path, head.Status, head.Header.Get("Content-Type"),
				len(head.Body), get.Status, get.Header.Get("Content-Type"))
		}
	}
	// HEAD follows GET's answer, errors included.
	if r := u.do("HEAD", "/apiv2/pub/documents/999999999", nil); r.Status != 404 {
		t.Errorf("HEAD of a missing document: %d, want 404", r.Status)
	}
	if r := u.do("HEAD", "/apiv2/pub/nothing-here", nil); r.Status != 404 {
		t.Errorf("HEAD of an unknown route: %d, want 404", r.Status)
	}
	// A HEAD on a route without GET is still a wrong method.
	if r := u.do("HEAD", "/apiv2/pub/search", nil); r.Status != 405 {
		t.Errorf("HEAD /apiv2/pub/search: %d, want 405", r.Status)
	}
}

// TestMethodNotAllowedSaysWhatIs: a 405 carries Allow (RFC 9110
// §15.5.6), with the methods of that path.
func TestMethodNotAllowedSaysWhatIs(t *testing.T) {
	t.Parallel()
	u := newUser(t, []string{uniq("g")})
	tests := []struct{ method, path, allow string }{
		{"PUT", "/apiv2/pub/folders", "GET, HEAD, POST"},
		{"OPTIONS", "/apiv2/pub/folders", "GET, HEAD, POST"},
		{"GET", "/apiv2/pub/search", "POST"},
		{"DELETE", "/apiv3/pub/documents/1", "PATCH"},
		{"GET", "/apiv2/pub/folders/7", "DELETE"},
		{"POST", "/apiv2/pub/documents/7/download", "GET, HEAD"},
		{"POST", "/healthz", "GET, HEAD"},
	}
	for _, tt := range tests {
		r := u.do(tt.method, tt.path, nil)
		expect(t, r, 405, "Method Not Allowed")
		if got := r.Header.Get("Allow"); got != tt.allow {
			t.Errorf("%s %s: Allow %q, want %q", tt.method, tt.path, got, tt.allow)
		}
	}
}

// TestEmptyPathSegmentsAreNotFound: a trailing or doubled slash names
// no resource; it must not reach a route with an empty parameter (the
// folder list with a trailing slash answered 405, DELETE of
// /apiv2/pub/folders/ a parameter error).
func TestEmptyPathSegmentsAreNotFound(t *testing.T) {
	t.Parallel()
	u := newUser(t, []string{uniq("g")})
	for _, tt := range []struct{ method, path string }{
		{"GET", "/apiv2/pub/folders/"},
		{"POST", "/apiv2/pub/folders/"},
		{"DELETE", "/apiv2/pub/folders/"},
		{"GET", "/apiv2/pub/documents//download"},
		{"GET", "/apiv2//pub/folders"},
		{"GET", "/apiv2/pub/schema/values/"},
	} {
		expect(t, u.do(tt.method, tt.path, nil), 404, "Not Found")
	}
}

// TestBodyOverTheLimitIs413: a JSON body over the gateway's limit is a 413, not
// a 400, whether its length is announced or not.
func TestBodyOverTheLimitIs413(t *testing.T) {
	t.Parallel()
	u := newUser(t, []string{uniq("g")})
	big := `{"name":"` + strings.Repeat("x", 5<<20) + `"}`
	for _, path := range []string{"/apiv2/pub/folders", "/apiv2/pub/search"} {
		expect(t, u.do("POST", path, big), 413, "Request body too large")
		// No Len: sent chunked.
		chunked := io.MultiReader(bytes.NewReader([]byte(big)))
		expect(t, u.do("POST", path, chunked, "Content-Type", "application/json"), 413, "Request body too large")
	}
	expect(t, u.do("PATCH", "/apiv3/pub/documents/1", big), 413, "Request body too large")
}

// TestUnknownQueryParametersAreRefused: docs/api.md §7 makes wrong field names a 400;
// a misspelt parameter must not be ignored silently (include=versions
// misspelt would quietly drop the version history).
func TestUnknownQueryParametersAreRefused(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	res := u.uploadFile("q.txt", []byte("query"))
	for _, tt := range []struct{ method, path, param string }{
		{"GET", "/apiv2/pub/folders?bogus=1", "bogus"},
		{"GET", "/apiv2/pub/folders?limit=5&parentid=0", "parentid"},
		{"GET", fmt.Sprintf("/apiv2/pub/documents/%d?includes=versions", res.DocID), "includes"},
		{"GET", fmt.Sprintf("/apiv2/pub/documents/%d/download?linked_file=1", res.DocID), "linked_file"},
		{"GET", "/apiv2/pub/schema/values/Documents.doc_type?serach=a", "serach"},
		{"DELETE", "/apiv2/pub/folders/999999?recursive=true", "recursive"},
		{"POST", "/apiv2/pub/search?limit=5", "limit"},
	} {
		var body any
		if tt.method == "POST" {
			body = map[string]any{}
		}
		expect(t, u.do(tt.method, tt.path, body), 400, "Unknown query parameter: "+tt.param)
	}
	// The documented ones still work.
	expect(t, u.do("GET", "/apiv2/pub/folders?q=x&parent_id=0&limit=5&offset=0", nil), 200)
	expect(t, u.do("GET", fmt.Sprintf("/apiv2/pub/documents/%d?include=versions", res.DocID), nil), 200)
	expect(t, u.do("GET", downloadPath(res.DocID, fmt.Sprintf("linked_file_id=%d", res.LinkedFileID)), nil), 200)
}
