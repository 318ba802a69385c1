package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/docrepo/docrepo/pkg/apierr"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	searchv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/search/v1"
)

func errorResponse(t *testing.T, err error) (int, http.Header, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/apiv2/pub/folders", nil)
	errorHandler(context.Background(), nil, nil, rec, req, err)
	var body struct {
		Detail *string `json:"detail"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Detail == nil {
		t.Fatalf("body %q is not {\"detail\": ...}: %v", rec.Body, err)
	}
	return rec.Code, rec.Header(), *body.Detail
}

// TestErrorHandlerHidesInternals: a server-side failure that did not come
// from docrepo's own error vocabulary (grpc-go's transport and codec errors,
// a downstream status passed through) must not show its text to the client.
func TestErrorHandlerHidesInternals(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		detail string
	}{
		{"docrepo internal error", apierr.Internal(errors.New("pq: relation does not exist")).GRPCStatus().Err(), 500, "Internal server error"},
		{"raw grpc internal error", status.Error(codes.Internal, "grpc: error unmarshalling request: proto: cannot parse invalid wire-format data"), 500, "Internal server error"},
		{"unknown error", status.Error(codes.Unknown, "dial tcp 10.0.0.7:5432: connect: connection refused"), 500, "Internal server error"},
		{"plain Go error", errors.New("open /var/lib/docrepo/blobs/x: permission denied"), 500, "Internal server error"},
		{"data loss", status.Error(codes.DataLoss, "checksum mismatch in segment 7"), 500, "Internal server error"},
		// grpc-go's own ResourceExhausted is an oversized message, a fault
		// of the server, not the client's rate limit.
		{"message too large", status.Error(codes.ResourceExhausted, "grpc: received message larger than max (40000000 vs. 33554432)"), 500, "Internal server error"},
		{"docrepo rate limit", apierr.RateLimited("Too many requests").GRPCStatus().Err(), 429, "Too many requests"},
		{"docrepo too large", apierr.TooLarge("File too large").GRPCStatus().Err(), 413, "File too large"},
		{"unavailable", status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:9101\""), 503, "Service unavailable"},
		{"grpc-gateway status error", &runtime.HTTPStatusError{HTTPStatus: http.StatusBadRequest, Err: errors.New("malformed escape sequence")}, 400, "Bad Request"},
	}
	for _, tt := range tests {
		code, hdr, detail := errorResponse(t, tt.err)
		if code != tt.status || detail != tt.detail {
			t.Errorf("%s: %d %q, want %d %q", tt.name, code, detail, tt.status, tt.detail)
		}
		if code != 429 && hdr.Get("Retry-After") != "" {
			t.Errorf("%s: Retry-After on a %d", tt.name, code)
		}
	}
}

// TestDecodeErrorsAreClean: request body errors name the field as the
// client wrote it (snake_case), without protojson's prefixes.
func TestDecodeErrorsAreClean(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"name":"a","bogus":1}`, `Invalid request body: unknown field "bogus"`},
		{`{"parent_id":"abc"}`, `Invalid request body: invalid value for int64 field parent_id: "abc"`},
		{`{"name":`, `Invalid request body: unexpected EOF`},
	}
	for _, tt := range tests {
		err := Marshaler{}.Unmarshal([]byte(tt.body), &folderv1.CreateFolderRequest{})
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %q", tt.body, err, tt.want)
		}
	}
}

// TestErrorBodiesAreNotHTMLEscaped: details are JSON like every other body
// (docs/design.md §2), not HTML-escaped JSON ("\u003c" for "<").
func TestErrorBodiesAreNotHTMLEscaped(t *testing.T) {
	rec := httptest.NewRecorder()
	writeDetail(rec, 400, `Unknown field <b> & "c"`)
	if got := strings.TrimSpace(rec.Body.String()); got != `{"detail":"Unknown field <b> & \"c\""}` {
		t.Fatalf("body %s", got)
	}
}

// TestMetricsMethodLabelIsBounded: the request method is a metric label, and
// a client may send any token as a method; each must not become a new time
// series.
func TestMetricsMethodLabelIsBounded(t *testing.T) {
	g := &Gateway{log: discardLogger()}
	h := g.middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(405) }))
	before := testutil.CollectAndCount(httpRequests)
	for _, m := range []string{"FOO1", "FOO2", "FOO3", "BREW", "PROPFIND"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(m, "/apiv2/pub/folders", nil))
	}
	if added := testutil.CollectAndCount(httpRequests) - before; added > 1 {
		t.Fatalf("5 unknown methods added %d series, want at most 1", added)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestBodiesAreStrictJSON: protojson reads proto3's lenient JSON (numbers
// as strings, int64 as "5"); the API's JSON has numbers as numbers (docs/design.md
// §2), so a quoted number is a wrong type (docs/api.md §7: 400). Free-form values
// (a where clause's value) keep whatever JSON type they have.
func TestBodiesAreStrictJSON(t *testing.T) {
	tests := []struct {
		name, body string
		msg        proto.Message
		wantErr    string
	}{
		{name: "quoted int32", body: `{"limit":"20"}`, msg: &searchv1.SearchRequest{},
			wantErr: `Invalid request body: invalid value for int32 field limit: "20"`},
		{name: "quoted nested int32", body: `{"options":{"highlight_length":"300"}}`, msg: &searchv1.SearchRequest{},
			wantErr: `Invalid request body: invalid value for int32 field highlight_length: "300"`},
		{name: "quoted camelCase int32", body: `{"options":{"highlightLength":"300"}}`, msg: &searchv1.SearchRequest{},
			wantErr: `Invalid request body: invalid value for int32 field highlight_length: "300"`},
		{name: "quoted int64", body: `{"name":"a","parent_id":"3"}`, msg: &folderv1.CreateFolderRequest{},
			wantErr: `Invalid request body: invalid value for int64 field parent_id: "3"`},
		{name: "quoted number in a list of messages", body: `{"sort":[{"field":"date","direction":"desc"}],"offset":"1"}`, msg: &searchv1.SearchRequest{},
			wantErr: `Invalid request body: invalid value for int32 field offset: "1"`},
		{name: "numbers", body: `{"limit":20,"offset":0,"options":{"highlight_length":300}}`, msg: &searchv1.SearchRequest{}},
		{name: "null number", body: `{"limit":null}`, msg: &searchv1.SearchRequest{}},
		{name: "free-form string value", body: `{"where":{"eq":{"field":"rev_number","value":"20"}}}`, msg: &searchv1.SearchRequest{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Marshaler{}.Unmarshal([]byte(tt.body), tt.msg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestBodyNestingIsBounded: a body nested deeper than any request needs is
// a 400 at the gateway; it must not reach a service whose decoder refuses
// it (a 500: protobuf's recursion limit is about 3,300 JSON levels of a
// Struct).
func TestBodyNestingIsBounded(t *testing.T) {
	deep := func(n int) string {
		return `{"where":` + strings.Repeat(`{"not":`, n) + `{"eq":{"field":"description","value":"b"}}` + strings.Repeat(`}`, n) + `}`
	}
	if err := (Marshaler{}).Unmarshal([]byte(deep(30)), &searchv1.SearchRequest{}); err != nil {
		t.Fatalf("30 levels: %v", err)
	}
	for _, n := range []int{maxJSONDepth, 5000, 20000} {
		err := Marshaler{}.Unmarshal([]byte(deep(n)), &searchv1.SearchRequest{})
		if err == nil || !strings.Contains(err.Error(), "nested too deeply") {
			t.Errorf("%d levels: %v, want a nesting error", n, err)
		}
	}
	// Brackets inside strings do not count.
	body := `{"where":{"eq":{"field":"description","value":"` + strings.Repeat("[{", 5000) + `"}}}`
	if err := (Marshaler{}).Unmarshal([]byte(body), &searchv1.SearchRequest{}); err != nil {
		t.Fatalf("brackets in a string: %v", err)
	}
}
