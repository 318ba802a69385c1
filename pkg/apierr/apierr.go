// Package apierr is docrepo's one error vocabulary. Services return *Error
// values from their domain code; the shared gRPC server turns them into a
// gRPC status exactly once, at the boundary, and the gateway turns that
// status into an HTTP status and a {"detail": ...} body.
//
// Codes that gRPC cannot express (422, 423, 413, 429) travel as an
// ErrorInfo detail whose Reason names the Kind.
package apierr

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Domain is the ErrorInfo domain of docrepo's errors.
const Domain = "docrepo"

// Kind classifies an error the way a client needs to react to it.
type Kind int

// The kinds, each with its HTTP status.
const (
	KindInternal            Kind = iota // 500
	KindInvalid                         // 400
	KindUnauthenticated                 // 401
	KindPermissionDenied                // 403
	KindNotFound                        // 404
	KindConflict                        // 409
	KindTooLarge                        // 413
	KindRangeNotSatisfiable             // 416
	KindUnprocessable                   // 422
	KindLocked                          // 423
	KindRateLimited                     // 429
	KindUnavailable                     // 503
	KindTimeout                         // 504
)

type kindInfo struct {
	reason string
	code   codes.Code
	http   int
}

var kinds = map[Kind]kindInfo{
	KindInternal:            {"INTERNAL", codes.Internal, http.StatusInternalServerError},
	KindInvalid:             {"INVALID", codes.InvalidArgument, http.StatusBadRequest},
	KindUnauthenticated:     {"UNAUTHENTICATED", codes.Unauthenticated, http.StatusUnauthorized},
	KindPermissionDenied:    {"PERMISSION_DENIED", codes.PermissionDenied, http.StatusForbidden},
	KindNotFound:            {"NOT_FOUND", codes.NotFound, http.StatusNotFound},
	KindConflict:            {"CONFLICT", codes.Aborted, http.StatusConflict},
	KindTooLarge:            {"TOO_LARGE", codes.ResourceExhausted, http.StatusRequestEntityTooLarge},
	KindRangeNotSatisfiable: {"RANGE_NOT_SATISFIABLE", codes.OutOfRange, http.StatusRequestedRangeNotSatisfiable},
	KindUnprocessable:       {"UNPROCESSABLE", codes.FailedPrecondition, http.StatusUnprocessableEntity},
	KindLocked:              {"LOCKED", codes.FailedPrecondition, http.StatusLocked},
	KindRateLimited:         {"RATE_LIMITED", codes.ResourceExhausted, http.StatusTooManyRequests},
	KindUnavailable:         {"UNAVAILABLE", codes.Unavailable, http.StatusServiceUnavailable},
	KindTimeout:             {"TIMEOUT", codes.DeadlineExceeded, http.StatusGatewayTimeout},
}

// Error is a domain error: a kind and the detail message shown to the client.
type Error struct {
	Kind   Kind
	Detail string
	// Cause is logged, never shown to clients.
	Cause error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Detail + ": " + e.Cause.Error()
	}
	return e.Detail
}

func (e *Error) Unwrap() error { return e.Cause }

// GRPCStatus renders the error as a gRPC status carrying the kind's reason.
func (e *Error) GRPCStatus() *status.Status {
	info := kinds[e.Kind]
	st := status.New(info.code, e.Detail)
	if withInfo, err := st.WithDetails(&errdetails.ErrorInfo{Reason: info.reason, Domain: Domain}); err == nil {
		return withInfo
	}
	return st
}

func newf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Detail: fmt.Sprintf(format, args...)}
}

// Invalid is a 400: the request is malformed.
func Invalid(format string, args ...any) *Error { return newf(KindInvalid, format, args...) }

// Unauthenticated is a 401.
func Unauthenticated(format string, args ...any) *Error {
	return newf(KindUnauthenticated, format, args...)
}

// PermissionDenied is a 403.
func PermissionDenied(format string, args ...any) *Error {
	return newf(KindPermissionDenied, format, args...)
}

// NotFound is a 404: absent, or not visible to the caller.
func NotFound(format string, args ...any) *Error { return newf(KindNotFound, format, args...) }

// Conflict is a 409.
func Conflict(format string, args ...any) *Error { return newf(KindConflict, format, args...) }

// TooLarge is a 413.
func TooLarge(format string, args ...any) *Error { return newf(KindTooLarge, format, args...) }

// RangeNotSatisfiable is a 416.
func RangeNotSatisfiable(format string, args ...any) *Error {
	return newf(KindRangeNotSatisfiable, format, args...)
}

// Unprocessable is a 422: well-formed but semantically wrong.
func Unprocessable(format string, args ...any) *Error {
	return newf(KindUnprocessable, format, args...)
}

// Locked is a 423.
func Locked(format string, args ...any) *Error { return newf(KindLocked, format, args...) }

// RateLimited is a 429.
func RateLimited(format string, args ...any) *Error { return newf(KindRateLimited, format, args...) }

// Unavailable is a 503.
func Unavailable(format string, args ...any) *Error { return newf(KindUnavailable, format, args...) }

// Timeout is a 504.
func Timeout(format string, args ...any) *Error { return newf(KindTimeout, format, args...) }

// Internal wraps an unexpected error; clients see only "Internal server error".
func Internal(cause error) *Error {
	return &Error{Kind: KindInternal, Detail: "Internal server error", Cause: cause}
}

// IsKind reports whether err is an *Error of kind k.
func IsKind(err error, k Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}

// ToStatus converts any error into the gRPC status a client receives. An
// *Error keeps its kind; a status from a downstream call passes through;
// context errors become Canceled/DeadlineExceeded; anything else is an
// internal error whose text is not disclosed.
func ToStatus(err error) *status.Status {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e.GRPCStatus()
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		return st
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Timeout("Gateway Timeout").GRPCStatus()
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, "Request cancelled")
	}
	return Internal(err).GRPCStatus()
}

// HTTPStatus maps a gRPC status (as produced by ToStatus) to an HTTP status.
func HTTPStatus(st *status.Status) int {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == Domain {
			for _, ki := range kinds {
				if ki.reason == info.Reason {
					return ki.http
				}
			}
		}
	}
	switch st.Code() {
	case codes.OK:
		return http.StatusOK
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.FailedPrecondition:
		return http.StatusBadRequest
	case codes.OutOfRange:
		return http.StatusRequestedRangeNotSatisfiable
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Canceled:
		return 499
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.Unimplemented:
		return http.StatusNotImplemented
	}
	return http.StatusInternalServerError
}
