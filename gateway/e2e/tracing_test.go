package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"testing"
	"time"
)

// TestTraceIDFollowsARequest shows one request's trace id in the gateway's
// log and in the folder service's log: the trace context travels from the
// HTTP request through the gateway's gRPC call into the service.
func TestTraceIDFollowsARequest(t *testing.T) {
	t.Parallel()
	u := newUser(t, []string{uniq("g")})
	// A fresh trace id per run: the captured logs outlive one test run
	// (go test -count=N), and must not match an earlier run's records.
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	traceID := hex.EncodeToString(raw[:])
	r := u.do("POST", "/apiv2/pub/folders/987654321/move", map[string]any{"new_parent_id": 0},
		"traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	expect(t, r, 404)
	if got := r.Header.Get("X-Trace-Id"); got != traceID {
		t.Fatalf("X-Trace-Id = %q, want the caller's trace %s", got, traceID)
	}
	// A request without a traceparent gets a fresh trace id.
	if fresh := u.do("GET", "/apiv2/pub/folders", nil).Header.Get("X-Trace-Id"); !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(fresh) || fresh == traceID {
		t.Fatalf("fresh request X-Trace-Id = %q", fresh)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		gw := logs.records(map[string]string{"service": "gateway", "trace_id": traceID, "msg": "http"})
		svc := logs.records(map[string]string{"service": "folder", "trace_id": traceID})
		if len(gw) > 0 && len(svc) > 0 {
			if gw[0]["request_id"] == nil || gw[0]["request_id"] != svc[0]["request_id"] {
				t.Fatalf("request ids differ: gateway %v, folder %v", gw[0]["request_id"], svc[0]["request_id"])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: %d gateway and %d folder log records", traceID, len(gw), len(svc))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
