package httpapi

import (
	"testing"
	"time"
)

func TestRateLimiterPerKey(t *testing.T) {
	rl := newRateLimiter(2, 3) // 2/s sustained, bursts of 3
	now := time.Unix(1000, 0)
	for i := 0; i < 3; i++ {
		if ok, _ := rl.allow("key-a", now); !ok {
			t.Fatalf("request %d within the burst refused", i+1)
		}
	}
	ok, wait := rl.allow("key-a", now)
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("4th request: allowed=%v wait=%v, want refused with a wait up to 1s", ok, wait)
	}
	if ok, _ := rl.allow("key-b", now); !ok {
		t.Fatal("another key is limited by key-a's use")
	}
	if ok, _ := rl.allow("key-a", now.Add(600*time.Millisecond)); !ok {
		t.Fatal("key-a not refilled after 600ms at 2/s")
	}
	// Idle limiters are dropped, so memory does not grow with old keys.
	rl.allow("key-c", now.Add(time.Hour))
	if len(rl.limiters) != 1 {
		t.Fatalf("%d limiters kept after an hour, want 1", len(rl.limiters))
	}
}
