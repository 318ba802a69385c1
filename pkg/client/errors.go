package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Error is an answer of the gateway outside 2xx: docs/api.md §7.
type Error struct {
	// Method and Path are the request's (path below the base URL).
	Method, Path string
	// Status is the HTTP status code.
	Status int
	// Detail is the body's `detail` (the body itself, trimmed, when it is
	// not docrepo's JSON error: a proxy's page, say).
	Detail string
	// RetryAfter is the delay the gateway asked for with Retry-After (429,
	// 503); zero when it sent none.
	RetryAfter time.Duration
	// Header is the response's header (e.g. Content-Range of a 416, Allow
	// of a 405).
	Header http.Header
}

func (e *Error) Error() string {
	return fmt.Sprintf("docrepo: %s %s: %d %s", e.Method, e.Path, e.Status, e.Detail)
}

// StatusOf returns the HTTP status of an *Error in err's chain, 0 when
// there is none (a transport error, say).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// DetailOf returns the detail of an *Error in err's chain, "" when there
// is none.
func DetailOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Detail
	}
	return ""
}

// decodeError reads a non-2xx response into an *Error.
func decodeError(method, path string, resp *http.Response) *Error {
	e := &Error{Method: method, Path: path, Status: resp.StatusCode, Header: resp.Header}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Detail *string `json:"detail"`
	}
	if json.Unmarshal(data, &body) == nil && body.Detail != nil {
		e.Detail = *body.Detail
	} else {
		e.Detail = strings.TrimSpace(string(data))
		if e.Detail == "" {
			e.Detail = http.StatusText(resp.StatusCode)
		}
	}
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return e
}

// parseRetryAfter reads Retry-After as seconds or an HTTP date (RFC 9110
// §10.2.3); zero when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// connectionRefused tells a request that never reached the server.
func connectionRefused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED)
}
