// Package webhook is the outbound half of docrepo's webhooks: signing a
// delivery the Standard Webhooks way (https://www.standardwebhooks.com),
// an HTTP client that will not be turned against the private network, and
// the retry schedule. The subscriptions, the deliveries and the consumer
// that makes them live in the document service (docs/design.md §9).
package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// SecretPrefix starts every signing secret: whsec_ and the base64 of the
// key, as Standard Webhooks libraries expect it.
const SecretPrefix = "whsec_"

// NewSecret returns a new signing secret of 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// SecretKey is the HMAC key of a secret; it fails unless the secret is
// whsec_ and the standard base64 of 24 to 64 bytes.
func SecretKey(secret string) ([]byte, error) {
	raw, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, errors.New("a webhook secret starts with " + SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(key) < 24 || len(key) > 64 {
		return nil, errors.New("a webhook secret is " + SecretPrefix + " and the base64 of 24 to 64 random bytes")
	}
	return key, nil
}

// Signature is the webhook-signature header of a message: "v1," and the
// base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the secret's key.
func Signature(secret, id string, timestamp time.Time, body []byte) (string, error) {
	key, err := SecretKey(secret)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp.Unix(), 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// Request is the signed POST of body to rawURL: Content-Type JSON and the
// webhook-id, webhook-timestamp and webhook-signature headers.
func Request(ctx context.Context, rawURL, secret, id string, timestamp time.Time, body []byte) (*http.Request, error) {
	sig, err := Signature(secret, id, timestamp, body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "docrepo-webhooks/1")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(timestamp.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	return req, nil
}

// ErrForbiddenAddress is the error of a connection refused because the
// address is loopback, private, link-local or otherwise not public.
var ErrForbiddenAddress = errors.New("webhook: the address is not a public one (loopback, private, link-local, ...); DOCREPO_WEBHOOK_ALLOW_PRIVATE allows it")

// PublicAddr reports whether ip may be called without the allow setting:
// not loopback, private (RFC 1918, fc00::/7), link-local, unspecified,
// multicast, CGNAT (100.64.0.0/10) or an IPv4-mapped form of those.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
}

// ClientOptions shape the outbound client.
type ClientOptions struct {
	// Timeout bounds one attempt: connecting, sending and the answer.
	Timeout time.Duration
	// AllowPrivate lets deliveries reach non-public addresses (tests, or a
	// receiver on the private network by choice).
	AllowPrivate bool
}

// NewClient returns the HTTP client of deliveries: no redirects (a 3xx is
// an answer, and a failed one), no proxy from the environment, the
// timeout, and a dialer that checks the address it actually connects to —
// after DNS resolution, so a name that resolves to a private address (DNS
// rebinding included) is refused like the address itself.
func NewClient(o ClientOptions) *http.Client {
	d := &net.Dialer{Timeout: o.Timeout}
	if !o.AllowPrivate {
		d.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("webhook: dialing %q: %w", address, err)
			}
			if !PublicAddr(ap.Addr()) {
				return fmt.Errorf("%w: %s", ErrForbiddenAddress, ap.Addr())
			}
			return nil
		}
	}
	return &http.Client{
		Timeout: o.Timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           d.DialContext,
			TLSHandshakeTimeout:   o.Timeout,
			ResponseHeaderTimeout: o.Timeout,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// MaxResponseBytes is how much of an answer is read (for the delivery log).
const MaxResponseBytes = 4 << 10

// Result is the outcome of one attempt.
type Result struct {
	// Status is the HTTP status, 0 when none came.
	Status int
	// Err says why it failed: a transport error, or the non-2xx status.
	Err error
}

// OK reports a 2xx answer.
func (r Result) OK() bool { return r.Err == nil && r.Status >= 200 && r.Status < 300 }

// Send makes one attempt of req with c.
func Send(c *http.Client, req *http.Request) Result {
	resp, err := c.Do(req)
	if err != nil {
		return Result{Err: err}
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Result{Status: resp.StatusCode, Err: fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, strings.TrimSpace(string(snippet)))}
	}
	return Result{Status: resp.StatusCode}
}

// allowPrivateHint tells whoever subscribes a receiver on their own
// machine or network how to allow it.
const allowPrivateHint = "; DOCREPO_WEBHOOK_ALLOW_PRIVATE=true on the document service allows it"

// CheckURL validates a subscription's URL: absolute http or https, a host,
// no user information; with allowPrivate false, a host that is a literal
// non-public address is refused at once (names are checked when dialed).
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return errors.New("url must be an absolute http or https URL")
	}
	if u.User != nil {
		return errors.New("url must not hold user information")
	}
	if len(raw) > 2048 {
		return errors.New("url is longer than 2048 bytes")
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !allowPrivate && !PublicAddr(ip) {
		return errors.New("url names an address that is not public (loopback, private, link-local, ...)" + allowPrivateHint)
	}
	if h := strings.ToLower(u.Hostname()); !allowPrivate && (h == "localhost" || strings.HasSuffix(h, ".localhost")) {
		return errors.New("url names localhost" + allowPrivateHint)
	}
	return nil
}

// Schedule is the retry policy: the first retry after Initial, each
// next one after twice the previous (at most Max), for Period after the
// first attempt; then the delivery is dead.
type Schedule struct {
	Initial, Max, Period time.Duration
}

// Next returns when attempt number attempts+1 is due after a failure of
// attempt number attempts (1 for the first) made at now, the retry period
// having started at since; dead when that would be past the period.
func (s Schedule) Next(attempts int, since, now time.Time) (at time.Time, dead bool) {
	d := s.Initial
	for i := 1; i < attempts && d < s.Max; i++ {
		d *= 2
	}
	d = min(d, s.Max)
	at = now.Add(d)
	if at.Sub(since) > s.Period {
		return time.Time{}, true
	}
	return at, false
}
