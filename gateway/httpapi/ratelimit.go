package httpapi

import (
	"crypto/sha256"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/docrepo/docrepo/pkg/auth"
)

// rateLimiter limits requests per API key (docs/design.md §4: configurable, off by
// default). Keys are identified by a hash of the bearer token, so the
// gateway needs no database; requests without a token are not limited here
// (the services answer them 401). Each gateway replica limits on its own.
type rateLimiter struct {
	rps   rate.Limit
	burst int
	// refill is how long an emptied bucket takes to fill up again.
	refill time.Duration

	mu       sync.Mutex
	limiters map[[16]byte]*keyLimiter
	lastGC   time.Time
	// gcAt is the map size that triggers a collection before the next
	// periodic one.
	gcAt int
}

type keyLimiter struct {
	lim *rate.Limiter
}

func newRateLimiter(rps float64, burst int) *rateLimiter {
	if burst < 1 {
		burst = int(math.Max(1, math.Ceil(rps)))
	}
	refill := time.Duration(float64(burst) / rps * float64(time.Second))
	return &rateLimiter{rps: rate.Limit(rps), burst: burst, refill: refill,
		limiters: map[[16]byte]*keyLimiter{}, gcAt: minRateGC}
}

// Memory bounds. The limiter keeps state per bearer token, valid or not, so
// a client inventing a token per request must not grow it without bound. A
// key whose bucket has refilled is in the same state as a key never seen,
// so it can be forgotten at once: the map holds only keys used within about
// one refill time. The collection runs every refill time (at least a second,
// at most idleAfter) and whenever the map has doubled since the last one;
// if keys still refilling reach maxRateKeys (a flood far faster than the
// buckets refill), arbitrary ones are forgotten, which only gives those
// keys a fresh burst.
const (
	idleAfter   = 10 * time.Minute
	maxRateKeys = 100_000
	minRateGC   = 1024
)

// allow reports whether a request with this token may proceed and, if not,
// how long to wait.
func (rl *rateLimiter) allow(token string, now time.Time) (bool, time.Duration) {
	_, ok, wait := rl.reserve(keyID(token), now)
	return ok, wait
}

// keyID is the limiter key of a string (a token, a client address).
func keyID(s string) [16]byte {
	sum := sha256.Sum256([]byte(s))
	var id [16]byte
	copy(id[:], sum[:16])
	return id
}

// reserve takes one request from the bucket of id. When the bucket is
// empty it takes nothing and says how long to wait; otherwise the
// reservation can be cancelled to give the request back.
func (rl *rateLimiter) reserve(id [16]byte, now time.Time) (*rate.Reservation, bool, time.Duration) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	kl, ok := rl.limiters[id]
	if !ok {
		if now.Sub(rl.lastGC) >= min(max(rl.refill, time.Second), idleAfter) || len(rl.limiters) >= rl.gcAt {
			rl.collect(now)
		}
		kl = &keyLimiter{lim: rate.NewLimiter(rl.rps, rl.burst)}
		rl.limiters[id] = kl
	}
	r := kl.lim.ReserveN(now, 1)
	if !r.OK() {
		return nil, false, time.Second
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return nil, false, d
	}
	return r, true, 0
}

// retryAfter sets Retry-After to wait, in whole seconds (at least 1).
func retryAfter(w http.ResponseWriter, wait time.Duration) {
	secs := int(math.Ceil(wait.Seconds()))
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(secs))
}

// collect forgets the keys whose bucket is full again, then, over the cap,
// arbitrary others.
func (rl *rateLimiter) collect(now time.Time) {
	full := float64(rl.burst)
	for k, v := range rl.limiters {
		if v.lim.TokensAt(now) >= full {
			delete(rl.limiters, k)
		}
	}
	if len(rl.limiters) >= maxRateKeys {
		// Down to three quarters, so the next collection is a quarter of
		// the cap away and a flood costs O(1) per request.
		for k := range rl.limiters {
			if len(rl.limiters) <= maxRateKeys*3/4 {
				break
			}
			delete(rl.limiters, k)
		}
	}
	rl.lastGC = now
	rl.gcAt = min(max(minRateGC, 2*len(rl.limiters)), maxRateKeys)
}

// middleware answers 429 with Retry-After when a key exceeds its rate.
func (rl *rateLimiter) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/apiv") {
			next.ServeHTTP(w, r)
			return
		}
		token, ok := auth.BearerToken(r.Header.Get("Authorization"))
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if allowed, wait := rl.allow(token, time.Now()); !allowed {
			retryAfter(w, wait)
			writeDetail(w, http.StatusTooManyRequests, "Too many requests: rate limit exceeded")
			return
		}
		next.ServeHTTP(w, r)
	})
}
