package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/auth"
	rest "github.com/docrepo/docrepo/pkg/client"
)

// TestWebhookStackThroughput is issue 22's stack-level webhook benchmark:
// one user uploads small text documents through the gateway at a steady
// target rate while a receiver on 127.0.0.1 is subscribed (by an
// administrator, through the REST API) to the user's document.created.
// Each delivery is matched to its upload by doc_id; its lag runs from
// the upload's answer to the receiver hearing of it. It reports the
// upload rate achieved (honestly: the offered rate is a target), the
// deliveries a second, lag p50/p99/max, and lost and duplicated
// deliveries; a lost one fails the test.
//
//	DOCREPO_WEBHOOK_STACK_BENCH=1 DOCREPO_EMBEDDER=hash go test ./e2e -run TestWebhookStackThroughput -v
//
// DOCREPO_WEBHOOK_STACK_RATE (uploads a second, 200) and
// DOCREPO_WEBHOOK_STACK_SECONDS (10) change the load.
func TestWebhookStackThroughput(t *testing.T) {
	if os.Getenv("DOCREPO_WEBHOOK_STACK_BENCH") == "" {
		t.Skip("the stack-level webhook benchmark runs with DOCREPO_WEBHOOK_STACK_BENCH=1 (and DOCREPO_EMBEDDER=hash)")
	}
	rate, seconds := envInt(t, "DOCREPO_WEBHOOK_STACK_RATE", 200), envInt(t, "DOCREPO_WEBHOOK_STACK_SECONDS", 10)
	const workers = 48
	ctx := context.Background()
	owner := newDocUser(t)
	admin := newUser(t, []string{uniq("g")}, auth.ScopeWebhooks).rest()

	// The receiver records when each document's deliveries arrive.
	var mu sync.Mutex
	arrivals := map[int64][]time.Time{}
	var badBodies int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		now := time.Now()
		var ev struct {
			Type string `json:"type"`
			Data struct {
				DocID int64 `json:"doc_id"`
			} `json:"data"`
		}
		mu.Lock()
		defer mu.Unlock()
		if err := json.Unmarshal(body, &ev); err != nil || ev.Type != "document.created" || ev.Data.DocID == 0 {
			badBodies++
		} else {
			arrivals[ev.Data.DocID] = append(arrivals[ev.Data.DocID], now)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	created, err := admin.CreateWebhook(ctx, rest.WebhookSpec{URL: srv.URL + "/hook", Owner: owner.username,
		EventTypes: []string{"document.created"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.DeleteWebhook(context.Background(), created.Webhook.WebhookID) })

	// The uploads: a ticker offers one a tick to a pool of clients; a
	// tick no client is free for is dropped (the rate achieved says so).
	total := rate * seconds
	oc := owner.rest()
	jobs := make(chan int)
	answered := map[int64]time.Time{}
	var failed int
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				up, err := oc.Upload(ctx, rest.Upload{FolderID: owner.folder.FolderID,
					File: strings.NewReader(fmt.Sprintf("webhook bench document %d %s", i, uniq("w"))), Filename: fmt.Sprintf("w%d.txt", i), ContentType: "text/plain"})
				now := time.Now()
				mu.Lock()
				if err != nil {
					failed++
					if failed <= 3 {
						t.Errorf("upload %d: %v", i, err)
					}
				} else {
					answered[up.DocID] = now
				}
				mu.Unlock()
			}
		})
	}
	started := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	offered, dropped := 0, 0
	for offered < total {
		<-tick.C
		select {
		case jobs <- offered:
		default:
			dropped++
		}
		offered++
	}
	tick.Stop()
	close(jobs)
	wg.Wait()
	uploadTime := time.Since(started)

	// Wait for every acknowledged upload's delivery (60 s at most), then
	// a little longer for duplicates.
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		missing := 0
		for d := range answered {
			if len(arrivals[d]) == 0 {
				missing++
			}
		}
		mu.Unlock()
		if missing == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)

	mu.Lock()
	defer mu.Unlock()
	var lags []time.Duration
	var lost, dups, deliveries, early int
	var last time.Time
	for d, at := range answered {
		got := arrivals[d]
		if len(got) == 0 {
			lost++
			continue
		}
		dups += len(got) - 1
		first := slices.MinFunc(got, func(a, b time.Time) int { return a.Compare(b) })
		lag := first.Sub(at)
		if lag < 0 { // delivered before the client read the answer
			early++
			lag = 0
		}
		lags = append(lags, lag)
	}
	foreign := 0
	for d, at := range arrivals {
		if _, ok := answered[d]; !ok {
			foreign += len(at)
		}
		deliveries += len(at)
		for _, a := range at {
			if a.After(last) {
				last = a
			}
		}
	}
	if len(lags) == 0 {
		t.Fatalf("no deliveries (%d uploads acknowledged, %d failed)", len(answered), failed)
	}
	slices.Sort(lags)
	pct := func(p float64) time.Duration {
		return lags[min(len(lags)-1, int(float64(len(lags))*p))].Round(time.Millisecond)
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	var b strings.Builder
	fmt.Fprintf(&b, "webhook deliveries through the stack (issue 22): target %d uploads/s for %d s, %d clients, DOCREPO_EMBEDDER=%q\n",
		rate, seconds, workers, os.Getenv("DOCREPO_EMBEDDER"))
	fmt.Fprintf(&b, "uploads: %d acknowledged, %d failed, %d ticks dropped (no client free) in %s: %.1f uploads/s achieved\n",
		len(answered), failed, dropped, ms(uploadTime), float64(len(answered))/uploadTime.Seconds())
	fmt.Fprintf(&b, "deliveries: %d received by %s after the first upload: %.1f deliveries/s\n",
		deliveries, ms(last.Sub(started)), float64(deliveries)/last.Sub(started).Seconds())
	fmt.Fprintf(&b, "delivery lag (upload's answer -> receiver): p50 %v  p99 %v  max %v (%d arrived before the client read the answer, counted 0)\n",
		pct(0.50), pct(0.99), ms(lags[len(lags)-1]), early)
	fmt.Fprintf(&b, "lost: %d  duplicated: %d  not ours: %d  unreadable bodies: %d\n", lost, dups, foreign, badBodies)
	fmt.Print(b.String())
	if lost > 0 {
		t.Errorf("%d acknowledged uploads never delivered in 60 s", lost)
	}
	if foreign > 0 || badBodies > 0 {
		t.Errorf("%d deliveries of documents not uploaded here, %d unreadable bodies", foreign, badBodies)
	}
}

// envInt is the positive number in the environment variable name, or def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}
