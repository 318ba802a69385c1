package httpapi

import (
	"fmt"
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

// TestRateLimiterMemoryIsBounded: the limiter keeps one entry per bearer
// token it has seen, valid or not, so a client sending a new random token
// with every request must not make it grow without bound. A key whose
// bucket has refilled is indistinguishable from a new one and can go at
// once; under a flood of keys still refilling, the map stays capped.
func TestRateLimiterMemoryIsBounded(t *testing.T) {
	rl := newRateLimiter(10, 10) // a bucket refills within a second
	start := time.Unix(1000, 0)
	const n = 200_000
	peak := 0
	for i := 0; i < n; i++ {
		now := start.Add(time.Duration(i) * time.Millisecond) // 1000 new tokens per second
		rl.allow(fmt.Sprintf("drk_spray_%d", i), now)
		peak = max(peak, len(rl.limiters))
	}
	// About one second's worth of keys (1000) is still refilling.
	if peak > 5000 {
		t.Fatalf("%d limiters kept for tokens seen once; want a few seconds' worth", peak)
	}
	// A flood far faster than any bucket refills stays under the cap.
	slow := newRateLimiter(0.001, 1) // a bucket refills in 1000 s
	for i := 0; i < 3*maxRateKeys; i++ {
		slow.allow(fmt.Sprintf("drk_flood_%d", i), start)
	}
	if len(slow.limiters) > maxRateKeys {
		t.Fatalf("%d limiters kept, over the cap of %d", len(slow.limiters), maxRateKeys)
	}
	// Keys in use keep their state through the collections.
	rl2 := newRateLimiter(1, 1)
	if ok, _ := rl2.allow("drk_busy", start); !ok {
		t.Fatal("first request refused")
	}
	for i := 0; i < 20_000; i++ {
		rl2.allow(fmt.Sprintf("drk_other_%d", i), start.Add(time.Duration(i)*10*time.Microsecond))
	}
	if ok, _ := rl2.allow("drk_busy", start.Add(200*time.Millisecond)); ok {
		t.Fatal("a busy key's bucket was reset by the collection of others")
	}
}
