package webhook

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The test vector published with the Standard Webhooks reference
// implementations: a receiver's library verifies what we sign.
func TestSignatureMatchesTheStandardWebhooksVector(t *testing.T) {
	got, err := Signature("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0),
		[]byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
}

// A receiving server checks each request with Verify (a receiver's check,
// written from the specification apart from Signature): a
// request signed with the subscription's secret passes, one signed with
// another secret is refused (and that refusal is a failed attempt).
func TestReceiverVerifiesTheSignature(t *testing.T) {
	secret := NewSecret()
	var verified atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") != "application/json" || Verify(secret, r.Header, body, time.Now(), DefaultTolerance) != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		verified.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	c := NewClient(ClientOptions{Timeout: 2 * time.Second, AllowPrivate: true})
	tests := []struct {
		name       string
		secret     string
		wantOK     bool
		wantStatus int
	}{
		{name: "the subscription's secret", secret: secret, wantOK: true, wantStatus: 204},
		{name: "another secret", secret: NewSecret(), wantOK: false, wantStatus: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := Request(context.Background(), srv.URL, tt.secret, "msg_1", time.Now(), []byte(`{"type":"document.created"}`))
			if err != nil {
				t.Fatal(err)
			}
			res := Send(c, req)
			if res.OK() != tt.wantOK || res.Status != tt.wantStatus {
				t.Fatalf("result %+v, want ok=%v status %d", res, tt.wantOK, tt.wantStatus)
			}
		})
	}
	if verified.Load() != 1 {
		t.Errorf("%d requests verified, want 1", verified.Load())
	}
}

// Without the allow setting the client refuses to connect to a
// non-public address, by IP or by a name that resolves to one (the
// address dialed is checked, so DNS cannot get around it), and never
// reaches the server.
func TestClientRefusesPrivateAddresses(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	c := NewClient(ClientOptions{Timeout: 2 * time.Second})
	for _, url := range []string{srv.URL, "http://localhost:" + port, "http://[::ffff:127.0.0.1]:" + port} {
		req, err := Request(context.Background(), url, NewSecret(), "msg_1", time.Now(), []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if res := Send(c, req); res.OK() || !errors.Is(res.Err, ErrForbiddenAddress) {
			t.Errorf("%s: %+v, want ErrForbiddenAddress", url, res)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the private server was reached %d times", hits.Load())
	}
	allowed := NewClient(ClientOptions{Timeout: 2 * time.Second, AllowPrivate: true})
	req, _ := Request(context.Background(), srv.URL, NewSecret(), "msg_1", time.Now(), []byte(`{}`))
	if res := Send(allowed, req); !res.OK() || hits.Load() != 1 {
		t.Fatalf("with the allow setting: %+v, %d hits", res, hits.Load())
	}
}

// A redirect is an answer, not an invitation: it is not followed and
// counts as a failed attempt; an answer slower than the timeout fails.
func TestClientFollowsNoRedirectAndTimesOut(t *testing.T) {
	var targetHits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { targetHits.Add(1) }))
	defer target.Close()
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer redirect.Close()
	ended := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-ended: // the test is over
		case <-time.After(time.Minute): // far from the bound below
		}
	}))
	defer slow.Close()
	defer close(ended) // before slow.Close, which waits for the handler
	c := NewClient(ClientOptions{Timeout: 300 * time.Millisecond, AllowPrivate: true})
	tests := []struct {
		name       string
		url        string
		wantStatus int
	}{
		{name: "redirect", url: redirect.URL, wantStatus: http.StatusTemporaryRedirect},
		{name: "slow", url: slow.URL, wantStatus: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := Request(context.Background(), tt.url, NewSecret(), "msg_1", time.Now(), []byte(`{}`))
			start := time.Now()
			res := Send(c, req)
			if res.OK() || res.Status != tt.wantStatus || res.Err == nil {
				t.Fatalf("result %+v, want a failure with status %d", res, tt.wantStatus)
			}
			// 300 ms timeout, a minute-slow server: a bound between them
			// that load cannot reach.
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
	if targetHits.Load() != 0 {
		t.Errorf("the redirect was followed")
	}
}

// The retry schedule on a fake clock: waits double from Initial up to
// Max, and the delivery is dead once the next attempt would fall past
// Period after the first.
func TestScheduleBacksOffExponentiallyForTheRetryPeriod(t *testing.T) {
	s := Schedule{Initial: 10 * time.Second, Max: time.Hour, Period: 24 * time.Hour}
	start := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	now := start
	var waits []time.Duration
	attempts := 1
	for {
		next, dead := s.Next(attempts, start, now)
		if dead {
			break
		}
		waits = append(waits, next.Sub(now))
		now = next
		attempts++
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second,
		320 * time.Second, 640 * time.Second, 1280 * time.Second, 2560 * time.Second, time.Hour}
	for i, w := range want {
		if waits[i] != w {
			t.Fatalf("wait %d = %v, want %v (all: %v)", i+1, waits[i], w, waits)
		}
	}
	for _, w := range waits[len(want):] {
		if w != time.Hour {
			t.Fatalf("waits after the cap: %v", waits)
		}
	}
	if now.Sub(start) > 24*time.Hour || now.Add(time.Hour).Sub(start) <= 24*time.Hour {
		t.Errorf("the last attempt at +%v: the schedule must use the period and stop within it", now.Sub(start))
	}
	if len(waits) != 31 { // 9 doubling waits (1 h 25 min), then 22 hourly ones
		t.Errorf("%d retries in 24 h, want 31", len(waits))
	}
}

func TestPublicAddr(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{addr: "8.8.8.8", want: true},
		{addr: "2606:4700::1111", want: true},
		{addr: "127.0.0.1"},
		{addr: "::1"},
		{addr: "10.1.2.3"},
		{addr: "172.16.0.1"},
		{addr: "192.168.1.1"},
		{addr: "169.254.169.254"},
		{addr: "fe80::1"},
		{addr: "fc00::1"},
		{addr: "0.0.0.0"},
		{addr: "100.64.0.1"},
		{addr: "::ffff:10.0.0.1"},
		{addr: "224.0.0.1"},
	}
	for _, tt := range tests {
		if got := PublicAddr(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("PublicAddr(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		url          string
		allowPrivate bool
		wantErr      bool
	}{
		{url: "https://hooks.example.com/docrepo"},
		{url: "http://203.0.113.9:8080/x"},
		{url: "ftp://example.com/", wantErr: true},
		{url: "/relative", wantErr: true},
		{url: "https://user:pw@example.com/", wantErr: true},
		{url: "http://127.0.0.1:9000/", wantErr: true},
		{url: "http://127.0.0.1:9000/", allowPrivate: true},
		{url: "http://localhost/", wantErr: true},
		{url: "http://169.254.169.254/latest/meta-data", wantErr: true},
	}
	for _, tt := range tests {
		if err := CheckURL(tt.url, tt.allowPrivate); (err != nil) != tt.wantErr {
			t.Errorf("CheckURL(%q, %v) = %v, want error %v", tt.url, tt.allowPrivate, err, tt.wantErr)
		}
	}
	// A user trying webhooks with a receiver on their machine learns from
	// the refusal which setting allows it.
	for _, u := range []string{"http://127.0.0.1:18999/hook", "http://localhost:18999/hook", "http://10.0.0.5/hook"} {
		if err := CheckURL(u, false); err == nil || !strings.Contains(err.Error(), "DOCREPO_WEBHOOK_ALLOW_PRIVATE") {
			t.Errorf("CheckURL(%q, false) = %v, want the setting that allows it named", u, err)
		}
	}
}

func TestSecretKeyRefusesWhatIsNotASecret(t *testing.T) {
	for _, s := range []string{"", "secret", "whsec_", "whsec_!!!", "whsec_" + base64.StdEncoding.EncodeToString([]byte("short"))} {
		if _, err := SecretKey(s); err == nil {
			t.Errorf("SecretKey(%q) accepted", s)
		}
	}
	if _, err := SecretKey(NewSecret()); err != nil {
		t.Errorf("a new secret: %v", err)
	}
}
