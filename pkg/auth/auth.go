// Package auth is docrepo's caller identity: API tokens, the Principal a
// token resolves to, and the gRPC interceptor every service installs so that
// each RPC is authenticated and its declared scopes enforced, whether it
// comes through the gateway or straight from an internal gRPC caller.
//
// Two kinds of credential exist. An API key ("drk_<43 url-safe
// characters>", 32 random bytes) belongs to a user and holds user scopes
// only: documents_read, documents_write, search, audit, webhooks. A service credential
// ("drs_<43 characters>") belongs to one of docrepo's own processes or to
// an operator's tool, holds the service scopes internal and admin only,
// has no user and no groups, and is refused for REST calls. Only the
// SHA-256 of either is stored; with that much entropy a plain hash is not
// brute-forceable, and it allows a direct indexed lookup.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strings"
)

// The scopes docrepo knows.
const (
	ScopeDocumentsRead  = "documents_read"
	ScopeDocumentsWrite = "documents_write"
	ScopeSearch         = "search"
	// ScopeAudit reads the whole audit trail (GET /apiv2/pub/audit): every
	// user's changes, whatever they can see. A user scope, so that an
	// administrator's API key can hold it over REST.
	ScopeAudit = "audit"
	// ScopeWebhooks manages webhook subscriptions, each of which receives
	// what its owner can see: an administrator's scope too.
	ScopeWebhooks = "webhooks"
	// ScopeInternal is for docrepo's own services (the indexer): it reads
	// every document regardless of groups.
	ScopeInternal = "internal"
	// ScopeAdmin allows administrative RPCs such as reindexing.
	ScopeAdmin = "admin"
)

// UserScopes are the scopes an API key (a user's credential) may hold.
var UserScopes = []string{ScopeDocumentsRead, ScopeDocumentsWrite, ScopeSearch, ScopeAudit, ScopeWebhooks}

// ServiceScopes are the scopes only a service credential may hold.
var ServiceScopes = []string{ScopeInternal, ScopeAdmin}

// KnownScopes lists every valid scope.
var KnownScopes = append(slices.Clone(UserScopes), ServiceScopes...)

const (
	tokenPrefix   = "drk_"
	servicePrefix = "drs_"
)

// Principal is the authenticated caller.
type Principal struct {
	// KeyID is the id of the API key, or of the service credential when
	// Service is set.
	KeyID    int64
	UserID   int64
	Username string
	GroupIDs []int64
	Scopes   []string
	// Service is the name of the service credential the caller used;
	// empty for a user's API key.
	Service string
}

// HasScope reports whether the principal's key holds scope.
func (p *Principal) HasScope(scope string) bool { return slices.Contains(p.Scopes, scope) }

// Unrestricted reports whether the principal sees every document and folder
// regardless of groups (docrepo's own services).
func (p *Principal) Unrestricted() bool { return p.HasScope(ScopeInternal) }

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal of the current call.
func FromContext(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok && p != nil
}

// Caller returns the principal of the current call, or the 401 "Invalid or
// expired token" when the call has none (a handler reached without the
// interceptor).
func Caller(ctx context.Context) (*Principal, error) {
	p, ok := FromContext(ctx)
	if !ok {
		return nil, ErrInvalidToken()
	}
	return p, nil
}

// NewToken returns a fresh random API-key token and its hash.
func NewToken() (token string, hash []byte) { return newToken(tokenPrefix) }

// NewServiceToken returns a fresh random service-credential token and its
// hash.
func NewServiceToken() (token string, hash []byte) { return newToken(servicePrefix) }

func newToken(prefix string) (string, []byte) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("auth: crypto/rand failed: " + err.Error()) // never happens on supported platforms
	}
	token := prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return token, HashToken(token)
}

// HashToken is the stored form of a token.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// TokenPrefix is the displayable start of a token (for key listings).
func TokenPrefix(token string) string {
	if len(token) > 12 {
		return token[:12]
	}
	return token
}

// WellFormed reports whether token has the shape of a docrepo token (an
// API key or a service credential), so that garbage is refused without a
// database round trip.
func WellFormed(token string) bool {
	if !strings.HasPrefix(token, tokenPrefix) && !strings.HasPrefix(token, servicePrefix) || len(token) != len(tokenPrefix)+43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(token[len(tokenPrefix):])
	return err == nil
}

// BearerToken extracts the token from an Authorization header value.
func BearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
