package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/docrepo/docrepo/gateway/httpapi"
)

// Every response doRequest receives for a documented route is validated
// against the gateway's OpenAPI document (status, headers, body), so the
// document cannot drift from what the end-to-end tests see.

var (
	openAPIOnce   sync.Once
	openAPIRouter routers.Router
	openAPIErr    error

	// validatedMu guards validated: operation -> statuses seen.
	validatedMu sync.Mutex
	validated   = map[string]map[int]bool{}
)

func documentRouter() (routers.Router, error) {
	openAPIOnce.Do(func() {
		doc, err := httpapi.OpenAPI()
		if err != nil {
			openAPIErr = err
			return
		}
		// Match paths on any host: the stack's gateway listens on a random
		// port, the document's server is "/".
		d := *doc
		d.Servers = nil
		openAPIRouter, openAPIErr = legacy.NewRouter(&d)
	})
	return openAPIRouter, openAPIErr
}

// checkResponse validates one response against the document; routes the
// document does not have (the routing-error tests) are left alone.
func checkResponse(req *http.Request, status int, header http.Header, body []byte) error {
	router, err := documentRouter()
	if err != nil {
		return fmt.Errorf("OpenAPI document: %w", err)
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		return nil
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return err
	}
	// A request the gateway accepted must be one the document accepts.
	if status/100 == 2 {
		if err := checkRequest(req, route, params); err != nil {
			return fmt.Errorf("the gateway accepted a request the document refuses: %w", err)
		}
	}
	validatedMu.Lock()
	op := route.Method + " " + route.Path
	if validated[op] == nil {
		validated[op] = map[int]bool{}
	}
	validated[op][status] = true
	validatedMu.Unlock()
	return nil
}

// checkRequest validates a request's parameters, and its body when it can
// be read again (http.NewRequest keeps GetBody for in-memory bodies).
func checkRequest(req *http.Request, route *routers.Route, params map[string]string) error {
	r := req.Clone(context.Background())
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}
	switch {
	case req.GetBody != nil:
		b, err := req.GetBody()
		if err != nil {
			return err
		}
		r.Body = b
	case req.Body == nil || req.Body == http.NoBody:
		r.Body = http.NoBody
	default: // a streamed body, sent and gone
		r.Body = http.NoBody
		opts.ExcludeRequestBody = true
	}
	return openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route, Options: opts,
	})
}

// validateResponse fails t when a response of a documented route does not
// match the OpenAPI document. It uses Errorf, so it is safe in goroutines.
func validateResponse(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if err := checkResponse(req, status, header, body); err != nil {
		shown := string(body)
		if len(shown) > 600 {
			shown = shown[:600] + "..."
		}
		t.Errorf("%s %s: the %d response does not match the OpenAPI document (gateway/httpapi/openapi.go): %v\nbody: %s",
			req.Method, req.URL.Path, status, err, shown)
	}
}

// TestOpenAPIValidationCatchesMismatches feeds the validator responses that
// contradict the document: each must be refused, so a passing suite means
// the responses really matched.
func TestOpenAPIValidationCatchesMismatches(t *testing.T) {
	u := newUser(t, []string{uniq("g")})
	created := u.do("POST", "/apiv2/pub/folders", map[string]any{"name": "OpenAPI"})
	expect(t, created, 200)
	var folder map[string]any
	created.JSON(t, &folder)
	req, _ := http.NewRequest("POST", stk.baseURL+"/apiv2/pub/folders", nil)
	if err := checkResponse(req, created.Status, created.Header, created.Body); err != nil {
		t.Fatalf("the real response is refused: %v", err)
	}
	mutate := func(f func(map[string]any)) []byte {
		m := map[string]any{}
		for k, v := range folder {
			m[k] = v
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	jsonHeader := http.Header{"Content-Type": []string{"application/json"}}
	tests := []struct {
		name   string
		status int
		header http.Header
		body   []byte
	}{
		{name: "an id as a string", status: 200, header: jsonHeader, body: mutate(func(m map[string]any) { m["folder_id"] = fmt.Sprint(m["folder_id"]) })},
		{name: "a missing field", status: 200, header: jsonHeader, body: mutate(func(m map[string]any) { delete(m, "full_path") })},
		{name: "an unknown field", status: 200, header: jsonHeader, body: mutate(func(m map[string]any) { m["fullPath"] = "x" })},
		{name: "null where the value is never null", status: 200, header: jsonHeader, body: mutate(func(m map[string]any) { m["name"] = nil })},
		{name: "an undocumented status", status: 418, header: jsonHeader, body: []byte(`{"detail":"teapot"}`)},
		{name: "an error without detail", status: 404, header: jsonHeader, body: []byte(`{"message":"Not Found"}`)},
		{name: "an envelope instead of the folder", status: 200, header: jsonHeader, body: []byte(`{"folder":` + string(created.Body) + `}`)},
		{name: "not JSON", status: 200, header: http.Header{"Content-Type": []string{"text/html"}}, body: []byte("<p>ok</p>")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkResponse(req, tt.status, tt.header, tt.body); err == nil {
				t.Fatalf("accepted %d %s", tt.status, tt.body)
			}
		})
	}

	// Requests: what the document accepts, and what it does not.
	router, err := documentRouter()
	if err != nil {
		t.Fatal(err)
	}
	requests := []struct {
		name, body string
		ok         bool
	}{
		{name: "a folder", body: `{"name":"x","parent_id":0}`, ok: true},
		{name: "null for an optional field", body: `{"name":"x","parent_id":null}`, ok: true},
		{name: "a name that is a number", body: `{"name":5}`},
		{name: "an unknown field", body: `{"name":"x","colour":"red"}`},
	}
	for _, rq := range requests {
		r, _ := http.NewRequest("POST", stk.baseURL+"/apiv2/pub/folders", strings.NewReader(rq.body))
		r.Header.Set("Content-Type", "application/json")
		route, params, err := router.FindRoute(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkRequest(r, route, params); (err == nil) != rq.ok {
			t.Errorf("request with %s: err = %v, want ok = %v", rq.name, err, rq.ok)
		}
	}

	// A bare array where the document says so, and not an object.
	list := u.do("GET", "/apiv2/pub/folders", nil)
	expect(t, list, 200)
	get, _ := http.NewRequest("GET", stk.baseURL+"/apiv2/pub/folders", nil)
	if err := checkResponse(get, 200, list.Header, []byte(`{"folders":`+string(list.Body)+`}`)); err == nil {
		t.Fatal("a wrapped folder list is accepted")
	}
	if !strings.HasPrefix(strings.TrimSpace(string(list.Body)), "[") {
		t.Fatalf("folder list %s is not a bare array", list.Body)
	}
}

// TestOpenAPIDocumentServed checks that /openapi.json is the document the
// responses are validated against.
func TestOpenAPIDocumentServed(t *testing.T) {
	r := doRequest(t, "", "GET", "/openapi.json", nil)
	expect(t, r, 200)
	loaded, err := openapi3.NewLoader().LoadFromData(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := loaded.Validate(context.Background()); err != nil {
		t.Fatalf("the served document is not valid: %v", err)
	}
	want, _ := httpapi.OpenAPIJSON()
	if string(want) != string(r.Body) {
		t.Fatal("the served document differs from httpapi.OpenAPI")
	}
}

// TestOpenAPIOperationalEndpoints calls the endpoints without a token, so
// that their responses are validated against the document too.
func TestOpenAPIOperationalEndpoints(t *testing.T) {
	for _, path := range []string{"/healthz", "/readyz"} {
		t.Run(path, func(t *testing.T) {
			r := doRequest(t, "", "GET", path, nil)
			expect(t, r, 200)
		})
	}
}
