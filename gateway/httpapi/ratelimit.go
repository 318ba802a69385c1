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

// rateLimiter limits requests per API key (DESIGN §4: configurable, off by
// default). Keys are identified by a hash of the bearer token, so the
// gateway needs no database; requests without a token are not limited here
// (the services answer them 401). Each gateway replica limits on its own.
type rateLimiter struct {
	rps   rate.Limit
	burst int

	mu       sync.Mutex
	limiters map[[16]byte]*keyLimiter
	lastGC   time.Time
}

type keyLimiter struct {
	lim  *rate.Limiter
	seen time.Time
}

func newRateLimiter(rps float64, burst int) *rateLimiter {
	if burst < 1 {
		burst = int(math.Max(1, math.Ceil(rps)))
	}
	return &rateLimiter{rps: rate.Limit(rps), burst: burst, limiters: map[[16]byte]*keyLimiter{}}
}

// idleAfter is how long an unused key's limiter is kept.
const idleAfter = 10 * time.Minute

// allow reports whether a request with this token may proceed and, if not,
// how long to wait.
func (rl *rateLimiter) allow(token string, now time.Time) (bool, time.Duration) {
	sum := sha256.Sum256([]byte(token))
	var id [16]byte
	copy(id[:], sum[:16])
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if now.Sub(rl.lastGC) > idleAfter {
		for k, v := range rl.limiters {
			if now.Sub(v.seen) > idleAfter {
				delete(rl.limiters, k)
			}
		}
		rl.lastGC = now
	}
	kl, ok := rl.limiters[id]
	if !ok {
		kl = &keyLimiter{lim: rate.NewLimiter(rl.rps, rl.burst)}
		rl.limiters[id] = kl
	}
	kl.seen = now
	r := kl.lim.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Second
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
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
			secs := int(math.Ceil(wait.Seconds()))
			if secs < 1 {
				secs = 1
			}
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			writeDetail(w, http.StatusTooManyRequests, "Too many requests: rate limit exceeded")
			return
		}
		next.ServeHTTP(w, r)
	})
}
