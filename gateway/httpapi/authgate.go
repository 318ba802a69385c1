package httpapi

import (
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/docrepo/docrepo/pkg/auth"
)

// authGate does what the gateway can before any work on a request:
//
//   - a request without a well-formed bearer token is answered 401 at
//     once, before its body is read or any service is called;
//   - failed authentications are limited per client address (a token
//     bucket of failures): when an address has used up its bucket, its
//     requests are answered 429 before anything else is done, unless they
//     carry a token a service accepted recently, so a client inventing
//     tokens cannot make each one cost a database lookup in a service,
//     and the honest users of a shared address (behind a NAT or a proxy)
//     keep working.
//
// Which tokens are good only the services know (the gateway has no
// database): the gate learns it from their answers, 401 or not. The
// address is the connection's peer address.
type authGate struct {
	rate  float64 // failures per second an address regains
	burst float64

	mu       sync.Mutex
	buckets  map[[16]byte]*failureBucket // by client address
	lastGC   time.Time
	accepted map[[16]byte]time.Time // token id → remembered until
}

// failureBucket holds the failed authentications an address may still
// have: a request takes one, and gives it back when it authenticated.
type failureBucket struct {
	tokens float64
	at     time.Time
}

// acceptedTTL is how long a token a service accepted passes the failure
// limit without being counted; acceptedMax bounds how many are kept.
const (
	acceptedTTL = 10 * time.Minute
	acceptedMax = 100_000
)

// maxBuckets bounds the addresses tracked; past it, the fullest buckets
// (those that matter least) are forgotten first.
const maxBuckets = 100_000

func newAuthGate(failureRate float64, failureBurst int) *authGate {
	return &authGate{rate: failureRate, burst: float64(failureBurst),
		buckets: map[[16]byte]*failureBucket{}, accepted: map[[16]byte]time.Time{}}
}

// take takes a failure from addr's bucket, or says how long until one is
// there again.
func (g *authGate) take(addr [16]byte, now time.Time) (bool, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.buckets[addr]
	if b == nil {
		if len(g.buckets) >= maxBuckets || now.Sub(g.lastGC) > time.Minute {
			g.collect(now)
		}
		b = &failureBucket{tokens: g.burst, at: now}
		g.buckets[addr] = b
	}
	g.refill(b, now)
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) / g.rate * float64(time.Second))
	}
	b.tokens--
	return true, 0
}

// giveBack returns the failure a request took: it authenticated.
func (g *authGate) giveBack(addr [16]byte, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if b := g.buckets[addr]; b != nil {
		g.refill(b, now)
		b.tokens = min(g.burst, b.tokens+1)
	}
}

func (g *authGate) refill(b *failureBucket, now time.Time) {
	if now.After(b.at) {
		b.tokens = min(g.burst, b.tokens+now.Sub(b.at).Seconds()*g.rate)
		b.at = now
	}
}

// collect forgets the addresses whose bucket is full again (the same as
// never seen), then, over the cap, arbitrary others (which only gives
// them a fresh burst).
func (g *authGate) collect(now time.Time) {
	for k, b := range g.buckets {
		if g.refill(b, now); b.tokens >= g.burst {
			delete(g.buckets, k)
		}
	}
	for k := range g.buckets {
		if len(g.buckets) < maxBuckets*3/4 {
			break
		}
		delete(g.buckets, k)
	}
	g.lastGC = now
}

// admit decides whether a request to a route needing a token goes on. When
// it does not, the answer is written. Otherwise the caller passes the
// final status to done.
func (g *authGate) admit(w http.ResponseWriter, r *http.Request) (done func(status int), ok bool) {
	now := time.Now()
	token, hasToken := auth.BearerToken(r.Header.Get("Authorization"))
	wellFormed := hasToken && auth.WellFormed(token)
	var tokenID [16]byte
	if wellFormed {
		tokenID = keyID(token)
		if g.known(tokenID, now) {
			return func(status int) {
				if status == http.StatusUnauthorized {
					g.forget(tokenID) // revoked or expired since
				}
			}, true
		}
	}
	addr := keyID(clientAddr(r))
	allowed, wait := g.take(addr, now)
	if !allowed {
		retryAfter(w, wait)
		writeDetail(w, http.StatusTooManyRequests, "Too many failed authentications from this address; retry later")
		return nil, false
	}
	if !wellFormed {
		writeError(w, r, auth.ErrInvalidToken()) // a failure: not given back
		return nil, false
	}
	return func(status int) {
		if status == http.StatusUnauthorized {
			return // a failure: not given back
		}
		now := time.Now()
		g.giveBack(addr, now)
		g.remember(tokenID, now)
	}, true
}

func (g *authGate) known(id [16]byte, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	until, ok := g.accepted[id]
	return ok && now.Before(until)
}

func (g *authGate) remember(id [16]byte, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.accepted) >= acceptedMax {
		for k, until := range g.accepted {
			if !now.Before(until) {
				delete(g.accepted, k)
			}
		}
		if len(g.accepted) >= acceptedMax {
			clear(g.accepted)
		}
	}
	g.accepted[id] = now.Add(acceptedTTL)
}

func (g *authGate) forget(id [16]byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.accepted, id)
}

// clientAddr is the request's client address: the peer's IP.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// publicRoute reports whether a route needs no token.
func publicRoute(route string) bool {
	switch route {
	case "/healthz", "/readyz", "/openapi.json":
		return true
	}
	return false
}
