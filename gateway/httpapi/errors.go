package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/logging"
)

// writeDetail writes the {"detail": ...} body every error response has.
func writeDetail(w http.ResponseWriter, code int, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"detail": detail})
}

var typeMismatch = regexp.MustCompile(`^type mismatch, parameter: ([a-z_.]+), error: .*`)

// clientDetail rewrites grpc-gateway's own parameter errors into details a
// client can act on.
func clientDetail(st *status.Status) string {
	msg := st.Message()
	if m := typeMismatch.FindStringSubmatch(msg); m != nil {
		return "Invalid value for " + m[1] + ": expected a number"
	}
	if strings.HasPrefix(msg, "parsing field \"") {
		// e.g. parsing field "limit": strconv.ParseInt: parsing "x": invalid syntax
		field := strings.TrimPrefix(msg, "parsing field \"")
		if i := strings.IndexByte(field, '"'); i > 0 {
			return "Invalid value for " + field[:i] + ": wrong type"
		}
	}
	return msg
}

// errorHandler writes gRPC errors as spec §7 errors.
func errorHandler(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if bodyTooLarge(r.Context()) {
		writeDetail(w, http.StatusRequestEntityTooLarge, tooLargeDetail)
		return
	}
	st := status.Convert(err)
	code := apierr.HTTPStatus(st)
	detail := clientDetail(st)
	switch {
	case st.Code() == codes.Unavailable:
		detail = "Service unavailable"
		logging.From(r.Context()).Error("backend unavailable", "path", r.URL.Path, "error", st.Message())
	case st.Code() == codes.DeadlineExceeded:
		detail = "Gateway Timeout"
	case code >= 500 && code != http.StatusGatewayTimeout:
		logging.From(r.Context()).Error("backend error", "path", r.URL.Path, "code", st.Code().String(), "error", st.Message())
		if st.Code() != codes.Internal {
			detail = http.StatusText(code)
		}
	}
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeDetail(w, code, detail)
}

// routingErrorHandler answers unknown routes and wrong methods. HEAD is
// served wherever GET is (RFC 9110 §9.1): a HEAD that only finds a GET
// route is run as that GET, and the server drops the body.
func routingErrorHandler(_ context.Context, mux *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	if httpStatus == http.StatusMethodNotAllowed && r.Method == http.MethodHead && mux != nil &&
		slices.Contains(allowedMethods(r.URL.Path), http.MethodGet) {
		get := r.Clone(r.Context())
		get.Method = http.MethodGet
		mux.ServeHTTP(w, get)
		return
	}
	switch httpStatus {
	case http.StatusNotFound:
		writeDetail(w, http.StatusNotFound, "Not Found")
	case http.StatusMethodNotAllowed:
		if allow := allowedMethods(r.URL.Path); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
		}
		writeDetail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
	case http.StatusBadRequest:
		writeDetail(w, http.StatusBadRequest, "Bad Request")
	default:
		writeDetail(w, httpStatus, http.StatusText(httpStatus))
	}
}

// writeError writes any error from a hand-written route.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	errorHandler(r.Context(), nil, nil, w, r, apierr.ToStatus(err).Err())
}
