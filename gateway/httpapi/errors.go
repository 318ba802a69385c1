package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/logging"
)

// writeDetail writes the {"detail": ...} body every error response has,
// without HTML escaping, like every other body (Marshaler).
func writeDetail(w http.ResponseWriter, code int, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]string{"detail": detail})
}

// internalDetail is what a client learns of a server-side failure.
const internalDetail = "Internal server error"

// ownError reports whether st carries docrepo's ErrorInfo, i.e. was made
// by apierr from a domain error whose detail is written for clients.
// Anything else (grpc-go's transport and codec errors, a downstream status
// passed through) may carry internal text.
func ownError(st *status.Status) bool {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == apierr.Domain {
			return true
		}
	}
	return false
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

// errorHandler writes gRPC errors as docs/api.md §7 errors.
func errorHandler(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if bodyTooLarge(r.Context()) {
		writeDetail(w, http.StatusRequestEntityTooLarge, tooLargeDetail)
		return
	}
	var hse *runtime.HTTPStatusError
	if errors.As(err, &hse) {
		// grpc-gateway's own routing errors (e.g. a malformed escape).
		writeDetail(w, hse.HTTPStatus, http.StatusText(hse.HTTPStatus))
		return
	}
	st := status.Convert(err)
	own := ownError(st)
	code := apierr.HTTPStatus(st)
	if !own && st.Code() == codes.ResourceExhausted {
		// grpc-go's message size limits, not docrepo's rate limit.
		code = http.StatusInternalServerError
	}
	detail := clientDetail(st)
	switch {
	case st.Code() == codes.Unavailable:
		detail = "Service unavailable"
		logging.From(r.Context()).Error("backend unavailable", "path", r.URL.Path, "error", st.Message())
	case st.Code() == codes.DeadlineExceeded:
		detail = "Gateway Timeout"
	case code >= 500 && code != http.StatusGatewayTimeout:
		logging.From(r.Context()).Error("backend error", "path", r.URL.Path, "code", st.Code().String(), "error", st.Message())
		switch {
		case own && st.Code() == codes.Internal:
			// apierr.Internal: the detail is already the generic one.
		case code == http.StatusInternalServerError:
			detail = internalDetail
		default:
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
	var busy errBusy
	if errors.As(err, &busy) {
		w.Header().Set("Retry-After", "1")
		writeDetail(w, http.StatusServiceUnavailable, busy.Error())
		return
	}
	errorHandler(r.Context(), nil, nil, w, r, apierr.ToStatus(err).Err())
}
