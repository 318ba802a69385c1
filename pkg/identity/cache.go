package identity

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
)

// notifyChannel is the channel the identity tables' triggers notify on
// every change a cached principal could depend on (0002_identity_notify).
const notifyChannel = "docrepo_identity"

// DefaultCacheTTL bounds how long a cached principal is used without
// asking Postgres again, should a notification ever be lost in a way the
// listener cannot see.
const DefaultCacheTTL = 30 * time.Second

// TokenCache authenticates tokens through a Store and remembers the
// answers, so a request that crosses four services costs one Postgres
// round trip instead of four, and a client's burst costs one in all.
//
// Revocation still takes effect at once: a dedicated connection LISTENs on
// docrepo_identity, which triggers on the identity tables notify on commit
// of any change to keys, users or memberships, and every notification
// empties the cache. While that connection is down (not yet connected,
// Postgres restarting) the cache is bypassed and every call goes to
// Postgres, so a change can never be missed; entries also expire after the
// TTL and at their key's expiry. A token that does not resolve (unknown,
// revoked, expired) is remembered as such for UnknownTTL, so a client
// repeating a bad token (a script with a revoked key) costs one round trip
// per UnknownTTL, not one per call; a change to the identity tables
// forgets those answers too (inserts of keys and credentials notify, so a
// hash inserted by hand is not refused for long). Every token differing
// (random ones) still costs a round trip each: the gateway limits failed
// authentications per client address.
//
// The LISTEN connection is pinged every listenPing: a connection that went
// half-open (a dead peer or network path that sent no reset) would
// otherwise deliver no notification and report no error, and revoked keys
// would be served until their entries expire.
type TokenCache struct {
	store *Store
	ttl   time.Duration
	log   *slog.Logger
	// dial opens the LISTEN connection (tests put a proxy in between).
	dial func(ctx context.Context) (*pgx.Conn, error)

	// listening is true while the LISTEN connection is up; only then are
	// entries served and stored.
	listening atomic.Bool

	mu      sync.Mutex
	entries map[[sha256.Size]byte]cacheEntry
	// unknown holds the tokens that did not resolve, until when they are
	// refused without asking.
	unknown map[[sha256.Size]byte]time.Time
	// gen counts flushes: an answer fetched before a flush is not stored
	// after it (it may predate the change the flush was for).
	gen uint64

	hits, misses atomic.Int64
}

// listenerName is the application_name of the LISTEN connection, which
// tells it apart in pg_stat_activity.
const listenerName = "docrepo-token-cache"

// UnknownTTL is how long a token that did not resolve is refused without
// asking Postgres again.
const UnknownTTL = 10 * time.Second

// maxUnknown bounds the memory of tokens that did not resolve; reaching it
// empties that memory (a flood of distinct tokens gains nothing from it).
const maxUnknown = 10_000

// Liveness of the LISTEN connection: a ping every listenPing without a
// notification, failing after listenPingTimeout. A half-open connection
// is noticed within their sum, and the cache bypassed from then on.
const (
	listenPing        = 2 * time.Second
	listenPingTimeout = time.Second
)

type cacheEntry struct {
	p       auth.Principal
	until   time.Time // min(fetched + ttl, key expiry)
	fetched time.Time
}

// maxCacheEntries bounds the cache's memory; reaching it empties it.
const maxCacheEntries = 100_000

// NewTokenCache returns a cache over store. It serves from memory only
// while Run is listening; until then it passes every call through.
func NewTokenCache(store *Store, ttl time.Duration, log *slog.Logger) *TokenCache {
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	c := &TokenCache{store: store, ttl: ttl, log: log,
		entries: make(map[[sha256.Size]byte]cacheEntry), unknown: make(map[[sha256.Size]byte]time.Time)}
	c.dial = func(ctx context.Context) (*pgx.Conn, error) {
		cfg := store.pool.Config().ConnConfig.Copy()
		cfg.RuntimeParams["application_name"] = listenerName
		return pgx.ConnectConfig(ctx, cfg)
	}
	return c
}

// Authenticate resolves token like Store.Authenticate, from memory when it
// can.
func (c *TokenCache) Authenticate(ctx context.Context, token string) (*auth.Principal, error) {
	key := sha256.Sum256([]byte(token))
	now := c.store.now()
	if c.listening.Load() {
		c.mu.Lock()
		e, ok := c.entries[key]
		refusedUntil, refused := c.unknown[key]
		c.mu.Unlock()
		if refused && now.Before(refusedUntil) {
			c.hits.Add(1)
			return nil, auth.ErrInvalidToken()
		}
		if ok && now.Before(e.until) {
			c.hits.Add(1)
			c.store.touch(&e.p, now)
			p := e.p
			p.Scopes = append([]string(nil), e.p.Scopes...)
			p.GroupIDs = append([]int64(nil), e.p.GroupIDs...)
			return &p, nil
		}
	}
	c.misses.Add(1)
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	p, expires, err := c.store.resolve(ctx, token)
	if apierr.IsKind(err, apierr.KindUnauthenticated) && c.listening.Load() {
		c.mu.Lock()
		if c.gen == gen {
			if len(c.unknown) >= maxUnknown {
				clear(c.unknown)
			}
			c.unknown[key] = now.Add(UnknownTTL)
		}
		c.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	if c.listening.Load() {
		until := now.Add(c.ttl)
		if expires != nil && expires.Before(until) {
			until = *expires
		}
		e := cacheEntry{p: *p, until: until, fetched: now}
		e.p.Scopes = append([]string(nil), p.Scopes...)
		e.p.GroupIDs = append([]int64(nil), p.GroupIDs...)
		c.mu.Lock()
		if c.gen == gen {
			if len(c.entries) >= maxCacheEntries {
				clear(c.entries)
			}
			c.entries[key] = e
		}
		c.mu.Unlock()
	}
	return p, nil
}

// Stats returns the hits and misses so far.
func (c *TokenCache) Stats() (hits, misses int64) { return c.hits.Load(), c.misses.Load() }

// flush empties the cache.
func (c *TokenCache) flush() {
	c.mu.Lock()
	c.gen++
	clear(c.entries)
	clear(c.unknown)
	c.mu.Unlock()
}

// Run keeps the LISTEN connection up until ctx ends, reconnecting with
// backoff. It returns nil when ctx ends.
func (c *TokenCache) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := c.listen(ctx)
		c.listening.Store(false)
		c.flush()
		if ctx.Err() != nil {
			break
		}
		if c.log != nil {
			c.log.Warn("token cache: identity change listener lost; authenticating every call against Postgres until it is back", "error", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	return nil
}

// listen holds one LISTEN connection until it fails or ctx ends, pinging
// it every listenPing without a notification.
func (c *TokenCache) listen(ctx context.Context) error {
	conn, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	// What changed while no one listened is unknown: start empty.
	c.flush()
	c.listening.Store(true)
	for {
		waitCtx, cancel := context.WithTimeout(ctx, listenPing)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case pgconn.Timeout(err):
			// Quiet for listenPing: is the connection still there?
			if err := c.ping(ctx, conn); err != nil {
				return fmt.Errorf("listener ping: %w", err)
			}
		case err != nil:
			return err
		case n == nil:
			return errors.New("empty notification")
		default:
			c.flush()
		}
	}
}

// ping checks that the LISTEN connection answers within
// listenPingTimeout.
func (c *TokenCache) ping(ctx context.Context, conn *pgx.Conn) error {
	pingCtx, cancel := context.WithTimeout(ctx, listenPingTimeout)
	defer cancel()
	return conn.Ping(pingCtx)
}
