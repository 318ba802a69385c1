package client

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
	"strings"
	"time"
)

// Client calls one docrepo gateway as the user of one API key. It is safe
// for concurrent use.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
	retry Retry
	agent string
}

// Options configures a Client; the zero value is usable.
type Options struct {
	// HTTPClient sends the requests (nil: a client without a timeout of
	// its own, since downloads and uploads may take long; bound calls with
	// their context).
	HTTPClient *http.Client
	// Retry is the retry policy (zero: DefaultRetry; NoRetry for none).
	Retry Retry
	// UserAgent is sent as User-Agent (empty: "docrepo-client").
	UserAgent string
}

// Retry says how often and how long a call is retried (see the package
// documentation for which calls and failures).
type Retry struct {
	// Attempts is the number of times a call is sent at most, the first
	// included (1: never retried).
	Attempts int
	// Backoff is the wait before the first retry; it doubles with every
	// further one, with jitter, up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// MaxWait bounds a Retry-After the gateway asks for: a longer one is
	// not waited for, the call returns the error.
	MaxWait time.Duration
	// Statuses are the answers worth sending a call again for (nil: 429,
	// 502 and 503; a tool that would rather retry a 500 too adds it).
	Statuses []int
}

// transientStatuses are Retry.Statuses by default.
var transientStatuses = []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable}

var (
	// DefaultRetry sends a call up to 4 times within about 1.5 s, waiting
	// up to 10 s for a Retry-After.
	DefaultRetry = Retry{Attempts: 4, Backoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second, MaxWait: 10 * time.Second}
	// NoRetry sends every call once: what a test of error answers wants.
	NoRetry = Retry{Attempts: 1}
)

// New returns a client of the gateway at baseURL (e.g.
// "http://127.0.0.1:8080") calling with token.
func New(baseURL, token string, opts ...Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("client: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[:port]", baseURL)
	}
	c := &Client{base: u, token: token, http: http.DefaultClient, retry: DefaultRetry, agent: "docrepo-client"}
	for _, o := range opts {
		if o.HTTPClient != nil {
			c.http = o.HTTPClient
		}
		if o.Retry.Attempts > 0 {
			c.retry = o.Retry
		}
		if o.UserAgent != "" {
			c.agent = o.UserAgent
		}
	}
	return c, nil
}

// WithToken returns a client like c calling with another token.
func (c *Client) WithToken(token string) *Client {
	cc := *c
	cc.token = token
	return &cc
}

// WithRetry returns a client like c with another retry policy.
func (c *Client) WithRetry(r Retry) *Client {
	cc := *c
	if r.Attempts < 1 {
		r.Attempts = 1
	}
	cc.retry = r
	return &cc
}

// BaseURL is the gateway's base URL.
func (c *Client) BaseURL() string { return c.base.String() }

// retryClass says when a call may be sent again.
type retryClass int

const (
	// retryUnsent: only when the request never reached the gateway.
	retryUnsent retryClass = iota
	// retryIdempotent: after any transient failure.
	retryIdempotent
)

// call is one request of an endpoint method.
type call struct {
	method string
	path   string // below the base URL, already escaped
	query  url.Values
	header http.Header
	// json is marshalled as the body when not nil.
	json any
	// body, when set, makes the body of an attempt (with its
	// Content-Type). It overrides json.
	body func() (io.ReadCloser, string, error)
	// once marks a body that cannot be made twice (a reader that is not
	// an io.Seeker): the call is never sent again.
	once  bool
	retry retryClass
	// ok lists statuses besides 2xx that are answers, not errors (304).
	ok []int
}

// do sends cl, retrying as the policy and its retry class allow, and
// decodes a JSON answer into out (when not nil). The response body is
// closed.
func (c *Client) do(ctx context.Context, cl call, out any) error {
	_, err := c.doHeader(ctx, cl, out)
	return err
}

// doHeader is do that also returns the answer's header, for the endpoints
// that report something there (Search: Docrepo-Reembedding).
func (c *Client) doHeader(ctx context.Context, cl call, out any) (http.Header, error) {
	resp, err := c.send(ctx, cl)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return resp.Header, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return nil, fmt.Errorf("client: %s %s: decode %d answer: %w", cl.method, cl.path, resp.StatusCode, err)
	}
	return resp.Header, nil
}

// send sends cl with retries and returns a response whose status is 2xx or
// one of cl.ok; the caller closes its body.
func (c *Client) send(ctx context.Context, cl call) (*http.Response, error) {
	if cl.json != nil && cl.body == nil {
		data, err := json.Marshal(cl.json)
		if err != nil {
			return nil, fmt.Errorf("client: %s %s: encode body: %w", cl.method, cl.path, err)
		}
		cl.body = func() (io.ReadCloser, string, error) {
			return io.NopCloser(bytes.NewReader(data)), "application/json", nil
		}
	}
	for attempt := 1; ; attempt++ {
		resp, err := c.once(ctx, cl)
		if err == nil {
			return resp, nil
		}
		wait, again := c.retryAfter(cl, attempt, err)
		if !again || ctx.Err() != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// once sends cl one time. A status outside 2xx and cl.ok is an *Error.
func (c *Client) once(ctx context.Context, cl call) (*http.Response, error) {
	u := c.base.String() + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	var body io.ReadCloser
	contentType := ""
	if cl.body != nil {
		var err error
		if body, contentType, err = cl.body(); err != nil {
			return nil, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u, body)
	if err != nil {
		if body != nil {
			body.Close()
		}
		return nil, err
	}
	for k, vs := range cl.header {
		req.Header[k] = vs
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("User-Agent", c.agent)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", cl.method, cl.path, err)
	}
	if resp.StatusCode/100 == 2 || contains(cl.ok, resp.StatusCode) {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, decodeError(cl.method, cl.path, resp)
}

func contains(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// retryAfter says whether a call that failed with err on the attempt-th
// try is sent again, and after how long.
func (c *Client) retryAfter(cl call, attempt int, err error) (time.Duration, bool) {
	if attempt >= c.retry.Attempts || cl.once {
		return 0, false
	}
	backoff := c.retry.Backoff << (attempt - 1)
	if backoff <= 0 || backoff > c.retry.MaxBackoff {
		backoff = c.retry.MaxBackoff
	}
	backoff = backoff/2 + rand.N(backoff/2+1) // jitter: concurrent callers spread out
	var e *Error
	switch {
	case errors.As(err, &e):
		if cl.retry != retryIdempotent {
			return 0, false
		}
		statuses := c.retry.Statuses
		if statuses == nil {
			statuses = transientStatuses
		}
		if !contains(statuses, e.Status) {
			return 0, false
		}
		if e.RetryAfter > 0 {
			if e.RetryAfter > c.retry.MaxWait {
				return 0, false
			}
			return e.RetryAfter, true
		}
		return backoff, true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return 0, false
	case cl.retry == retryIdempotent || connectionRefused(err):
		return backoff, true
	}
	return 0, false
}

// callJSON sends cl and decodes its JSON answer into a new T.
func callJSON[T any](ctx context.Context, c *Client, cl call) (*T, error) {
	var v T
	if err := c.do(ctx, cl, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// callSlice sends cl and decodes its JSON array answer.
func callSlice[T any](ctx context.Context, c *Client, cl call) ([]T, error) {
	var v []T
	if err := c.do(ctx, cl, &v); err != nil {
		return nil, err
	}
	return v, nil
}
