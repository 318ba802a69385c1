// Package identity stores users, groups, memberships and API keys in
// Postgres. docrepoctl writes through it; every service authenticates
// bearer tokens through Store.Authenticate.
package identity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
)

// auditLog is the identity schema's audit log: every change made through
// the store appends its entry there in the change's transaction. The actor
// is the call's principal, else the process named by audit.WithService
// (docrepoctl names itself).
var auditLog = audit.In(Schema)

// Store is the identity store.
type Store struct {
	pool *pgxpool.Pool
	now  func() time.Time
	// touched maps a key id to when this process last wrote its
	// last_used_at (see claimTouch).
	touched sync.Map
}

// NewStore returns a store on pool.
func NewStore(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, now: time.Now}
}

// Group is a group of users.
type Group struct {
	ID   int64
	Name string
}

// User is a user with its groups.
type User struct {
	ID       int64
	Username string
	Groups   []Group
}

// Key describes an API key (never its token).
type Key struct {
	ID         int64
	Username   string
	Prefix     string
	Scopes     []string
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
	LastUsedAt *time.Time
}

// ErrExists is returned when creating something that already exists.
var ErrExists = errors.New("already exists")

func validName(kind, name string) error {
	if name == "" || strings.TrimSpace(name) != name || utf8.RuneCountInString(name) > 100 || !utf8.ValidString(name) ||
		strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == ',' }) {
		return apierr.Invalid("invalid %s name %q: 1 to 100 characters, no commas, control characters or surrounding spaces", kind, name)
	}
	return nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// CreateGroup creates a group.
func (s *Store) CreateGroup(ctx context.Context, name string) (Group, error) {
	if err := validName("group", name); err != nil {
		return Group{}, err
	}
	g := Group{Name: name}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO identity.groups (name) VALUES ($1) RETURNING id`, name).Scan(&g.ID); err != nil {
			return err
		}
		return auditLog.Append(ctx, tx, audit.Entry{Action: "group.created", ObjectID: g.ID, Details: map[string]any{"name": name}})
	})
	if isUniqueViolation(err) {
		return Group{}, fmt.Errorf("group %q: %w", name, ErrExists)
	}
	return g, err
}

// CreateUser creates a user in the named groups, creating missing groups.
func (s *Store) CreateUser(ctx context.Context, username string, groups []string) (User, error) {
	if err := validName("user", username); err != nil {
		return User{}, err
	}
	for _, g := range groups {
		if err := validName("group", g); err != nil {
			return User{}, err
		}
	}
	u := User{Username: username}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO identity.users (username) VALUES ($1) RETURNING id`, username).Scan(&u.ID); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("user %q: %w", username, ErrExists)
			}
			return err
		}
		for _, name := range slices.Compact(slices.Sorted(slices.Values(groups))) {
			var g Group
			// The no-op update makes RETURNING yield existing rows too.
			if err := tx.QueryRow(ctx, `INSERT INTO identity.groups (name) VALUES ($1)
				ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id, name`, name).Scan(&g.ID, &g.Name); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO identity.user_groups (user_id, group_id) VALUES ($1, $2)`, u.ID, g.ID); err != nil {
				return err
			}
			u.Groups = append(u.Groups, g)
		}
		return auditLog.Append(ctx, tx, audit.Entry{Action: "user.created", ObjectID: u.ID,
			Details: map[string]any{"username": username, "groups": groupNames(u.Groups)}})
	})
	return u, err
}

func groupNames(gs []Group) []string {
	names := make([]string, 0, len(gs))
	for _, g := range gs {
		names = append(names, g.Name)
	}
	return names
}

// AddUserToGroups adds an existing user to groups, creating missing groups.
func (s *Store) AddUserToGroups(ctx context.Context, username string, groups []string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var uid int64
		if err := tx.QueryRow(ctx, `SELECT id FROM identity.users WHERE username = $1`, username).Scan(&uid); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return apierr.NotFound("no user %q", username)
			}
			return err
		}
		var added []string
		for _, name := range groups {
			if err := validName("group", name); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, `WITH g AS (INSERT INTO identity.groups (name) VALUES ($2)
				ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id)
				INSERT INTO identity.user_groups (user_id, group_id) SELECT $1, id FROM g ON CONFLICT DO NOTHING`, uid, name)
			if err != nil {
				return err
			}
			if tag.RowsAffected() > 0 {
				added = append(added, name)
			}
		}
		if len(added) == 0 {
			return nil
		}
		return auditLog.Append(ctx, tx, audit.Entry{Action: "user.groups_added", ObjectID: uid,
			Details: map[string]any{"username": username, "groups": added}})
	})
}

// ValidateScopes checks the scopes of an API key: at least one, each a
// user scope. The service scopes (internal, admin) belong on service
// credentials only.
func ValidateScopes(scopes []string) error {
	return validateScopes(scopes, auth.UserScopes, "an API key", "service credentials (docrepoctl credential create)")
}

// ValidateServiceScopes checks the scopes of a service credential: at
// least one, each a service scope.
func ValidateServiceScopes(scopes []string) error {
	return validateScopes(scopes, auth.ServiceScopes, "a service credential", "API keys (docrepoctl key create)")
}

func validateScopes(scopes, allowed []string, what, other string) error {
	if len(scopes) == 0 {
		return apierr.Invalid("at least one scope is required (%s may hold: %s)", what, strings.Join(allowed, ", "))
	}
	for _, s := range scopes {
		switch {
		case slices.Contains(allowed, s):
		case slices.Contains(auth.KnownScopes, s):
			return apierr.Invalid("scope %q cannot be given to %s: it is for %s", s, what, other)
		default:
			return apierr.Invalid("unknown scope %q (%s may hold: %s)", s, what, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// CreateKey creates an API key for username and returns its token, which is
// not stored and cannot be shown again. expiresIn 0 means no expiry.
func (s *Store) CreateKey(ctx context.Context, username string, scopes []string, expiresIn time.Duration) (string, Key, error) {
	if err := ValidateScopes(scopes); err != nil {
		return "", Key{}, err
	}
	if expiresIn < 0 {
		return "", Key{}, apierr.Invalid("expiry must be positive")
	}
	scopes = slices.Compact(slices.Sorted(slices.Values(scopes)))
	token, hash := auth.NewToken()
	k := Key{Username: username, Prefix: auth.TokenPrefix(token), Scopes: scopes}
	expires := s.expiry(expiresIn)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO identity.api_keys (user_id, token_hash, token_prefix, scopes, expires_at)
			SELECT id, $2, $3, $4, $5 FROM identity.users WHERE username = $1
			RETURNING id, created_at, expires_at`, username, hash, k.Prefix, scopes, expires).Scan(&k.ID, &k.CreatedAt, &k.ExpiresAt); err != nil {
			return err
		}
		return auditLog.Append(ctx, tx, audit.Entry{Action: "api_key.created", ObjectID: k.ID, Details: map[string]any{
			"username": username, "scopes": scopes, "prefix": k.Prefix, "expires_at": k.ExpiresAt}})
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", Key{}, apierr.NotFound("no user %q", username)
	}
	if err != nil {
		return "", Key{}, err
	}
	return token, k, nil
}

// RevokeKey revokes a key by id. Revoking twice is not an error.
func (s *Store) RevokeKey(ctx context.Context, id int64) error {
	return s.revoke(ctx, id, "key", "api_key.revoked", "username",
		`SELECT u.username, k.revoked_at IS NOT NULL FROM identity.api_keys k JOIN identity.users u ON u.id = k.user_id
		WHERE k.id = $1 FOR UPDATE OF k`,
		`UPDATE identity.api_keys SET revoked_at = now() WHERE id = $1`)
}

// revoke sets revoked_at of credential id (an API key or a service
// credential), keeping an earlier revocation's time: lookup returns the
// credential's holder (recorded as detail holder in the audit entry of
// action) and whether it is revoked already; update revokes it.
func (s *Store) revoke(ctx context.Context, id int64, what, action, holder, lookup, update string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var name string
		var revoked bool
		err := tx.QueryRow(ctx, lookup, id).Scan(&name, &revoked)
		if errors.Is(err, pgx.ErrNoRows) {
			return apierr.NotFound("no %s with id %d", what, id)
		}
		if err != nil || revoked {
			return err
		}
		if _, err := tx.Exec(ctx, update, id); err != nil {
			return err
		}
		return auditLog.Append(ctx, tx, audit.Entry{Action: action, ObjectID: id, Details: map[string]any{holder: name}})
	})
}

// expiry is when a credential created now with lifetime expiresIn
// expires (nil: never, for 0).
func (s *Store) expiry(expiresIn time.Duration) *time.Time {
	if expiresIn <= 0 {
		return nil
	}
	t := s.now().Add(expiresIn).UTC()
	return &t
}

// ListKeys lists keys, of one user when username is not empty.
func (s *Store) ListKeys(ctx context.Context, username string) ([]Key, error) {
	rows, err := s.pool.Query(ctx, `SELECT k.id, u.username, k.token_prefix, k.scopes, k.created_at, k.expires_at, k.revoked_at, k.last_used_at
		FROM identity.api_keys k JOIN identity.users u ON u.id = k.user_id
		WHERE $1 = '' OR u.username = $1 ORDER BY k.id`, username)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Key, error) {
		var k Key
		err := r.Scan(&k.ID, &k.Username, &k.Prefix, &k.Scopes, &k.CreatedAt, &k.ExpiresAt, &k.RevokedAt, &k.LastUsedAt)
		return k, err
	})
}

// ServiceCredential describes a service credential (never its token).
type ServiceCredential struct {
	ID         int64
	Name       string
	Prefix     string
	Scopes     []string
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
	LastUsedAt *time.Time
}

// CreateServiceCredential creates a service credential and returns its
// token, which is not stored and cannot be shown again. Names need not be
// unique: a rotation creates a second credential of the same name, then
// revokes the first. expiresIn 0 means no expiry.
func (s *Store) CreateServiceCredential(ctx context.Context, name string, scopes []string, expiresIn time.Duration) (string, ServiceCredential, error) {
	if err := validName("service credential", name); err != nil {
		return "", ServiceCredential{}, err
	}
	if err := ValidateServiceScopes(scopes); err != nil {
		return "", ServiceCredential{}, err
	}
	if expiresIn < 0 {
		return "", ServiceCredential{}, apierr.Invalid("expiry must be positive")
	}
	scopes = slices.Compact(slices.Sorted(slices.Values(scopes)))
	token, hash := auth.NewServiceToken()
	c := ServiceCredential{Name: name, Prefix: auth.TokenPrefix(token), Scopes: scopes}
	expires := s.expiry(expiresIn)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO identity.service_credentials (name, token_hash, token_prefix, scopes, expires_at)
			VALUES ($1, $2, $3, $4, $5) RETURNING id, created_at, expires_at`, name, hash, c.Prefix, scopes, expires).
			Scan(&c.ID, &c.CreatedAt, &c.ExpiresAt); err != nil {
			return err
		}
		return auditLog.Append(ctx, tx, audit.Entry{Action: "service_credential.created", ObjectID: c.ID, Details: map[string]any{
			"name": name, "scopes": scopes, "prefix": c.Prefix, "expires_at": c.ExpiresAt}})
	})
	if err != nil {
		return "", ServiceCredential{}, err
	}
	return token, c, nil
}

// RevokeServiceCredential revokes a service credential by id. Revoking
// twice is not an error.
func (s *Store) RevokeServiceCredential(ctx context.Context, id int64) error {
	return s.revoke(ctx, id, "service credential", "service_credential.revoked", "name",
		`SELECT name, revoked_at IS NOT NULL FROM identity.service_credentials WHERE id = $1 FOR UPDATE`,
		`UPDATE identity.service_credentials SET revoked_at = now() WHERE id = $1`)
}

// ListServiceCredentials lists service credentials, of one name when name
// is not empty.
func (s *Store) ListServiceCredentials(ctx context.Context, name string) ([]ServiceCredential, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, name, token_prefix, scopes, created_at, expires_at, revoked_at, last_used_at
		FROM identity.service_credentials WHERE $1 = '' OR name = $1 ORDER BY id`, name)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ServiceCredential, error) {
		var c ServiceCredential
		err := r.Scan(&c.ID, &c.Name, &c.Prefix, &c.Scopes, &c.CreatedAt, &c.ExpiresAt, &c.RevokedAt, &c.LastUsedAt)
		return c, err
	})
}

// lastUsedResolution bounds how often last_used_at is written per key.
const lastUsedResolution = time.Minute

// Authenticate resolves a token. Unknown, expired and revoked tokens all get
// the same 401, so a caller cannot tell them apart.
func (s *Store) Authenticate(ctx context.Context, token string) (*auth.Principal, error) {
	p, _, err := s.resolve(ctx, token)
	return p, err
}

// resolve is Authenticate, also returning when the key expires (nil:
// never), for TokenCache. A token is looked up among the API keys and the
// service credentials at once (a key made before service credentials
// existed may have become one, keeping its drk_ token).
func (s *Store) resolve(ctx context.Context, token string) (*auth.Principal, *time.Time, error) {
	var (
		p        auth.Principal
		expires  *time.Time
		revoked  *time.Time
		lastUsed *time.Time
	)
	err := s.pool.QueryRow(ctx, `SELECT k.id, k.user_id, u.username, k.scopes, k.expires_at, k.revoked_at, k.last_used_at,
			coalesce((SELECT array_agg(group_id ORDER BY group_id) FROM identity.user_groups WHERE user_id = k.user_id), '{}'), ''
		FROM identity.api_keys k JOIN identity.users u ON u.id = k.user_id WHERE k.token_hash = $1
		UNION ALL
		SELECT c.id, 0, 'service:' || c.name, c.scopes, c.expires_at, c.revoked_at, c.last_used_at, '{}', c.name
		FROM identity.service_credentials c WHERE c.token_hash = $1
		LIMIT 1`, auth.HashToken(token)).
		Scan(&p.KeyID, &p.UserID, &p.Username, &p.Scopes, &expires, &revoked, &lastUsed, &p.GroupIDs, &p.Service)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, auth.ErrInvalidToken()
	}
	if err != nil {
		return nil, nil, apierr.Internal(fmt.Errorf("authenticate: %w", err))
	}
	now := s.now()
	if revoked != nil || (expires != nil && !now.Before(*expires)) {
		return nil, nil, auth.ErrInvalidToken()
	}
	if lastUsed == nil || now.Sub(*lastUsed) > lastUsedResolution {
		s.touch(&p, now)
	}
	return &p, expires, nil
}

// touch records that p's key (or service credential) was used, at most
// once per lastUsedResolution and process. Best effort and off the request
// path: a lost update only makes last_used_at a little older.
func (s *Store) touch(p *auth.Principal, now time.Time) {
	// Two literal statements, not one with the table spliced in, so that
	// pkg/walls reads which tables this names.
	update, keyID, slot := `UPDATE identity.api_keys SET last_used_at = now() WHERE id = $1`, p.KeyID, p.KeyID
	if p.Service != "" {
		update, slot = `UPDATE identity.service_credentials SET last_used_at = now() WHERE id = $1`, -p.KeyID // negative: its own claimTouch slot
	}
	if !s.claimTouch(slot, now) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = s.pool.Exec(ctx, update, keyID)
	}()
}

// claimTouch reports whether this process should write key id's (a
// service credential's as -id)
// last_used_at now: at most once per lastUsedResolution. Without it, every
// request of a burst that read the old value before the first write
// committed started its own UPDATE of the same row, each holding a pooled
// connection while it waited for the row lock.
func (s *Store) claimTouch(id int64, now time.Time) bool {
	for {
		prev, loaded := s.touched.LoadOrStore(id, now)
		if !loaded {
			return true
		}
		if now.Sub(prev.(time.Time)) <= lastUsedResolution {
			return false
		}
		if s.touched.CompareAndSwap(id, prev, now) {
			return true
		}
	}
}

// AuditEntries is the identity schema's part of the audit feed (see
// audit.Log.List): the changes to users, groups, keys and credentials.
func (s *Store) AuditEntries(ctx context.Context, f audit.Filter, after audit.Position, limit int) ([]audit.Record, error) {
	return auditLog.List(ctx, s.pool, f, after, limit)
}

// ErrUnknownUser is returned by UserGroups for a username or id that names
// no user.
var ErrUnknownUser = errors.New("identity: unknown user")

// UserGroups returns the id and the group ids of a user, by username (when
// username is not empty) or else by id: what a webhook subscription's
// owner can see (pkg/visibility).
func (s *Store) UserGroups(ctx context.Context, username string, id int64) (int64, []int64, error) {
	var groups []int64
	err := s.pool.QueryRow(ctx, `SELECT u.id,
			coalesce((SELECT array_agg(group_id ORDER BY group_id) FROM identity.user_groups WHERE user_id = u.id), '{}')
		FROM identity.users u WHERE CASE WHEN $1 <> '' THEN u.username = $1 ELSE u.id = $2 END`, username, id).Scan(&id, &groups)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, ErrUnknownUser
	}
	if err != nil {
		return 0, nil, fmt.Errorf("identity: user groups: %w", err)
	}
	return id, groups, nil
}
