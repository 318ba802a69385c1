package opensearchengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
)

// ResponseError is an OpenSearch error response (a status that the
// operation does not expect).
type ResponseError struct {
	Method, Path string
	Status       int
	// Type and Reason are error.type and error.reason of the body, when it
	// has them.
	Type, Reason string
	// Body is the start of the response body.
	Body string
}

func (e *ResponseError) Error() string {
	if e.Type != "" {
		return fmt.Sprintf("opensearchengine: %s %s: %d %s: %s", e.Method, e.Path, e.Status, e.Type, e.Reason)
	}
	return fmt.Sprintf("opensearchengine: %s %s: %d %s", e.Method, e.Path, e.Status, e.Body)
}

// Retryable reports whether the failure is transient (overload or an
// unavailable node): 429, 502, 503 or 504.
func (e *ResponseError) Retryable() bool { return retryableStatus(e.Status) }

func retryableStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

func newResponseError(method, path string, status int, body []byte) *ResponseError {
	e := &ResponseError{Method: method, Path: path, Status: status, Body: truncate(string(body), 1000)}
	var parsed struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &parsed) == nil && len(parsed.Error) > 0 {
		var s struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(parsed.Error, &s) == nil {
			e.Type, e.Reason = s.Type, s.Reason
		} else {
			var str string
			if json.Unmarshal(parsed.Error, &str) == nil {
				e.Reason = str
			}
		}
	}
	return e
}

// client sends requests through opensearch-go's transport, which handles
// the node list, basic auth, TLS and the retries of transient failures
// (with backoff, the body replayed).
type client struct {
	os *opensearch.Client
	// timeout bounds a request whose context has no deadline of its own.
	timeout time.Duration
}

// DefaultRequestTimeout bounds every OpenSearch request without a
// deadline of its own: a hung node fails the call instead of holding it.
const DefaultRequestTimeout = 30 * time.Second

func newClient(cfg Config) (*client, error) {
	backoff := cfg.RetryBackoff
	oc := opensearch.Config{
		Addresses:          cfg.Addresses,
		Username:           cfg.Username,
		Password:           cfg.Password,
		InsecureSkipVerify: cfg.InsecureSkipVerify,
		Transport:          cfg.Transport,
		RetryOnStatus:      []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout},
		MaxRetries:         cfg.MaxRetries,
		DisableRetry:       cfg.MaxRetries == 0,
		RetryBackoff: func(attempt int) time.Duration {
			return backoffDelay(backoff, attempt)
		},
	}
	if cfg.InsecureSkipVerify && oc.Transport == nil {
		// The transport clones http.DefaultTransport to set
		// InsecureSkipVerify; give it a fresh one so the process-wide
		// default is never touched.
		oc.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	c, err := opensearch.NewClient(oc)
	if err != nil {
		return nil, fmt.Errorf("opensearchengine: %w", err)
	}
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	return &client{os: c, timeout: timeout}, nil
}

// backoffDelay is base·2^(attempt-1), at most 5s, with ±20% jitter.
func backoffDelay(base time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < 5*time.Second; i++ {
		d *= 2
	}
	d = min(d, 5*time.Second)
	jitter := time.Duration(float64(d) * 0.2 * (2*rand.Float64() - 1))
	return d + jitter
}

// response is a complete HTTP response.
type response struct {
	Status int
	Body   []byte
}

// do sends one request and reads the whole response. The error is non-nil
// only when no response arrived (after the transport's retries); when ctx
// ended, it wraps ctx's error (context.DeadlineExceeded on a deadline).
func (c *client) do(ctx context.Context, method, path string, query url.Values, body []byte, contentType string) (*response, error) {
	u := path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	if _, ok := ctx.Deadline(); !ok && c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("opensearchengine: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	req.Header.Set("Accept", "application/json")
	res, err := c.os.Perform(req)
	if err != nil {
		if res != nil && res.Body != nil {
			res.Body.Close()
		}
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			return nil, fmt.Errorf("opensearchengine: %s %s: %w (%v)", method, path, cerr, err)
		}
		return nil, fmt.Errorf("opensearchengine: %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("opensearchengine: %s %s: reading the response: %w", method, path, cerr)
		}
		return nil, fmt.Errorf("opensearchengine: %s %s: reading the response: %w", method, path, err)
	}
	return &response{Status: res.StatusCode, Body: data}, nil
}

// doJSON sends body (marshalled unless already bytes) as JSON.
func (c *client) doJSON(ctx context.Context, method, path string, query url.Values, body any) (*response, error) {
	var data []byte
	if body != nil {
		var err error
		data, err = json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("opensearchengine: encoding the request: %w", err)
		}
	}
	return c.do(ctx, method, path, query, data, "application/json")
}

func (c *client) close() error { return c.os.Close() }
