package e2e

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/gateway/httpapi"
	"github.com/docrepo/docrepo/pkg/logging"
)

// TestRateLimitPerKey runs a second gateway with a per-key limit in front of
// the same services: a key over its rate gets 429 with Retry-After, while
// another key is unaffected.
func TestRateLimitPerKey(t *testing.T) {
	t.Parallel()
	lis, err := listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- httpapi.Run(ctx, httpapi.Config{
			Listener: lis, Logger: logging.NewTo(&logs, "gateway-limited", "info", "json"),
			DocumentAddr: stk.addrs["document"], FolderAddr: stk.addrs["folder"],
			SearchAddr: stk.addrs["search"], SchemaAddr: stk.addrs["schema"],
			RateLimit: 0.5, RateBurst: 2,
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("limited gateway: %v", err)
		}
	})
	base := "http://" + lis.Addr().String()
	get := func(token string) *http.Response {
		req, _ := http.NewRequest("GET", base+"/apiv2/pub/folders", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	a := newUser(t, []string{uniq("g")})
	b := newUser(t, []string{uniq("g")})
	for i := 0; i < 2; i++ {
		if r := get(a.token); r.StatusCode != 200 {
			t.Fatalf("request %d within the burst: %d", i+1, r.StatusCode)
		}
	}
	r := get(a.token)
	if r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("request over the limit: %d, want 429", r.StatusCode)
	}
	if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || secs < 1 || secs > 2 {
		t.Fatalf("Retry-After = %q, want 1..2 seconds", r.Header.Get("Retry-After"))
	}
	if r := get(b.token); r.StatusCode != 200 {
		t.Fatalf("another key: %d, want 200", r.StatusCode)
	}

	// A second Authorization header cannot slip past the limit: a request
	// with two is refused outright, whatever they hold.
	req, _ := http.NewRequest("GET", base+"/apiv2/pub/folders", nil)
	req.Header.Add("Authorization", "Basic eDp5")
	req.Header.Add("Authorization", "Bearer "+a.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "Only one Authorization header is allowed") {
		t.Fatalf("two Authorization headers: %d %s, want 400", resp.StatusCode, body)
	}
}
