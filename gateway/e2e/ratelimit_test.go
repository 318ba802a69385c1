package e2e

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestRateLimitPerKey runs a second gateway with a per-key limit in front of
// the same services: a key over its rate gets 429 with Retry-After, while
// another key is unaffected.
func TestRateLimitPerKey(t *testing.T) {
	t.Parallel()
	base := startVariant(t, []string{"gateway"}, "DOCREPO_RATE_LIMIT=0.5", "DOCREPO_RATE_BURST=2").URL()
	get := func(token string) *response { return doRequestTo(t, base, token, "GET", "/apiv2/pub/folders", nil) }
	a := newUser(t, []string{uniq("g")})
	b := newUser(t, []string{uniq("g")})
	for i := 0; i < 2; i++ {
		if r := get(a.token); r.Status != 200 {
			t.Fatalf("request %d within the burst: %d", i+1, r.Status)
		}
	}
	r := get(a.token)
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("request over the limit: %d, want 429", r.Status)
	}
	if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || secs < 1 || secs > 2 {
		t.Fatalf("Retry-After = %q, want 1..2 seconds", r.Header.Get("Retry-After"))
	}
	if r := get(b.token); r.Status != 200 {
		t.Fatalf("another key: %d, want 200", r.Status)
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
