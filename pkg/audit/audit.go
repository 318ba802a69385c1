// Package audit is docrepo's audit trail: one append-only table, audit_log,
// in the schema of every owner of data (document, folder, identity,
// webhook), and the code that writes and reads it.
//
// A change appends its entry with [Append] (or [Queue] in a batch) inside
// the transaction that makes the change, next to its outbox row, so the
// entry exists if and only if the change committed. Who made it comes from
// the call's principal (pkg/auth): the user, the username and the API key,
// or the service credential; a process acting on its own (a sweeper,
// docrepoctl) names itself in [Entry.Service]. The request id comes from
// the context (pkg/logging).
//
// Entries are never changed or removed: the table's triggers refuse UPDATE,
// DELETE and TRUNCATE whoever asks (migrations/0001_audit_log.sql), and
// nothing refers to the audited object by foreign key, so the entries of a
// purged document outlive it.
//
// Reading: [Log.History] lists one object's entries; [Log.List] is one
// owner's part of the feed GET /apiv2/pub/audit, ordered by (transaction,
// id) and limited to transactions that can no longer commit entries before
// it, so that a cursor ([Cursor]) never skips one; [Merge] interleaves the
// owners' parts into one page (docs/architecture.md, "The audit trail").
package audit

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/logging"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations is the migration set of the audit_log table in schema, the
// schema of the owner whose changes it records. Apply it after the owner's
// own set.
func Migrations(schema string) database.MigrationSet {
	return database.Embedded(migrationFiles, schema, "audit")
}

// Entry is one change to record.
type Entry struct {
	// Action is "<object type>.<what happened>": document.created,
	// document.updated, folder.moved, api_key.revoked, ...
	Action string
	// ObjectID is the id of the changed object (0 when it has none).
	ObjectID int64
	// Details say what changed: the fields before and after, the file, the
	// rows. They must marshal to a JSON object; nil is {}.
	Details any
	// Service names the process making the change when the call has no
	// principal (a sweeper, an event consumer); when empty, the one
	// WithService put in the context, else "system".
	Service string
}

// Actor is who made a change.
type Actor struct {
	UserID   int64
	Username string
	// KeyID is the API key's id, or the service credential's when Service
	// is set by one.
	KeyID   int64
	Service string
}

// validAction is "<object type>.<verb>", lower case.
var validAction = regexp.MustCompile(`^[a-z][a-z_]{0,40}\.[a-z][a-z_]{0,40}$`)

// ObjectType is the object type of an action: the part before the dot.
func ObjectType(action string) string {
	t, _, _ := strings.Cut(action, ".")
	return t
}

type serviceKey struct{}

// WithService returns ctx naming the process that makes the changes of
// calls without a principal (docrepoctl, a consumer of events).
func WithService(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, serviceKey{}, name)
}

// ActorOf is who the call of ctx is: its principal; without one, service,
// else the process WithService named, else "system".
func ActorOf(ctx context.Context, service string) Actor {
	if p, ok := auth.FromContext(ctx); ok {
		return Actor{UserID: p.UserID, Username: p.Username, KeyID: p.KeyID, Service: p.Service}
	}
	if service == "" {
		service, _ = ctx.Value(serviceKey{}).(string)
	}
	if service == "" {
		service = "system"
	}
	return Actor{Service: service}
}

// Log is the audit_log table of one schema.
type Log struct {
	schema string
	table  string
}

// In is the audit log of schema; "" is the one the connection's
// search_path finds (a service's own).
func In(schema string) Log {
	if schema == "" {
		return Log{table: "audit_log"}
	}
	return Log{schema: schema, table: pgx.Identifier{schema, "audit_log"}.Sanitize()}
}

// Append records e in the search_path's audit log inside tx.
func Append(ctx context.Context, tx pgx.Tx, e Entry) error { return In("").Append(ctx, tx, e) }

// Queue is Append as one statement of a batch the caller sends in its
// transaction.
func Queue(ctx context.Context, b *pgx.Batch, e Entry) error { return In("").Queue(ctx, b, e) }

// Append records e inside tx.
func (l Log) Append(ctx context.Context, tx pgx.Tx, e Entry) error {
	sql, args, err := l.insert(ctx, e)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	return nil
}

// Queue is Append as one statement of a batch the caller sends in its
// transaction (pgx.Tx.SendBatch).
func (l Log) Queue(ctx context.Context, b *pgx.Batch, e Entry) error {
	sql, args, err := l.insert(ctx, e)
	if err != nil {
		return err
	}
	b.Queue(sql, args...).Exec(func(pgconn.CommandTag) error { return nil })
	return nil
}

func (l Log) insert(ctx context.Context, e Entry) (string, []any, error) {
	if !validAction.MatchString(e.Action) {
		return "", nil, fmt.Errorf("audit: invalid action %q", e.Action)
	}
	details := []byte("{}")
	if e.Details != nil {
		var err error
		if details, err = json.Marshal(e.Details); err != nil {
			return "", nil, fmt.Errorf("audit %s: details: %w", e.Action, err)
		}
		if len(details) == 0 || details[0] != '{' {
			return "", nil, fmt.Errorf("audit %s: details must be a JSON object, got %.20s", e.Action, details)
		}
	}
	a := ActorOf(ctx, e.Service)
	return `INSERT INTO ` + l.table + ` (action, object_type, object_id, actor_user_id, actor_username, actor_key_id,
			actor_service, request_id, details)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		[]any{e.Action, ObjectType(e.Action), e.ObjectID, a.UserID, a.Username, a.KeyID, a.Service,
			logging.RequestID(ctx), string(details)}, nil
}

// Record is a stored entry.
type Record struct {
	// Source is the schema holding the entry: its owner.
	Source     string
	ID         int64
	TxID       uint64
	OccurredAt time.Time
	Action     string
	ObjectType string
	ObjectID   int64
	Actor      Actor
	RequestID  string
	Details    json.RawMessage
}

// Position is where an owner's part of the feed was left: the last entry
// taken from it.
func (r Record) Position() Position { return Position{TxID: r.TxID, ID: r.ID} }

// Position orders an owner's entries: by transaction id, then id.
type Position struct {
	TxID uint64
	ID   int64
}

// Less reports whether p comes before q.
func (p Position) Less(q Position) bool {
	return p.TxID < q.TxID || p.TxID == q.TxID && p.ID < q.ID
}

// Querier runs queries: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Filter narrows the feed. Zero fields match everything.
type Filter struct {
	// User is the acting username (a service credential's is
	// "service:<name>").
	User string
	// Actions are exact actions ("document.updated") or every action of
	// an object type ("document.*").
	Actions []string
	// Since and Until bound occurred_at: Since <= t < Until.
	Since, Until time.Time
	// ObjectType and ObjectID narrow it to one object's entries (ObjectID
	// 0: every object of the type); ObjectID needs ObjectType.
	ObjectType string
	ObjectID   int64
}

// Check validates f.
func (f Filter) Check() error {
	for _, a := range f.Actions {
		if !validAction.MatchString(a) && !(strings.HasSuffix(a, ".*") && validAction.MatchString(strings.TrimSuffix(a, "*")+"x")) {
			return apierr.Invalid("Invalid value for action: %q is not an action (e.g. document.updated) or object type (e.g. document.*)", a)
		}
	}
	if f.ObjectID < 0 {
		return apierr.Invalid("Invalid value for object_id: must be positive")
	}
	if f.ObjectID != 0 && f.ObjectType == "" {
		return apierr.Invalid("Invalid value for object_id: needs object_type (e.g. object_type=document)")
	}
	if f.ObjectType != "" && !validAction.MatchString(f.ObjectType+".x") {
		return apierr.Invalid("Invalid value for object_type: %q is not an object type (e.g. document, folder)", f.ObjectType)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return apierr.Invalid("Invalid time range: since must be before until")
	}
	return nil
}

// MaxLimit bounds the entries of one page.
const MaxLimit = 1000

const columns = `id, txid::text, occurred_at, action, object_type, object_id, actor_user_id, actor_username,
	actor_key_id, actor_service, request_id, details`

// List returns up to limit entries of the log matching f, after position
// after, in (txid, id) order. It shows only entries of transactions older
// than every transaction still running (the snapshot's xmin): an entry
// that commits later then sorts after every entry returned now, so a
// reader following the feed with its position never skips one. A
// long-running write transaction delays the tail of the feed until it
// ends; it never loses an entry.
func (l Log) List(ctx context.Context, q Querier, f Filter, after Position, limit int) ([]Record, error) {
	exact, prefixes := splitActions(f.Actions)
	rows, err := q.Query(ctx, `SELECT `+columns+` FROM `+l.table+`
		WHERE txid < pg_snapshot_xmin(pg_current_snapshot())
		  AND (txid, id) > ($1::text::xid8, $2::bigint)
		  AND ($3 = '' OR actor_username = $3)
		  AND (cardinality($4::text[]) + cardinality($5::text[]) = 0 OR action = ANY($4)
		       OR EXISTS (SELECT 1 FROM unnest($5::text[]) p WHERE starts_with(action, p)))
		  AND ($6::timestamptz IS NULL OR occurred_at >= $6)
		  AND ($7::timestamptz IS NULL OR occurred_at < $7)
		  AND ($9 = '' OR object_type = $9) AND ($10 = 0 OR object_id = $10)
		ORDER BY txid, id LIMIT $8`,
		strconv.FormatUint(after.TxID, 10), after.ID, f.User, exact, prefixes, optTime(f.Since), optTime(f.Until), clamp(limit),
		f.ObjectType, f.ObjectID)
	if err != nil {
		return nil, fmt.Errorf("audit: list %s: %w", l.source(), err)
	}
	return l.collect(rows)
}

// History returns up to limit entries about one object after entry id
// afterID, oldest first.
func (l Log) History(ctx context.Context, q Querier, objectType string, objectID, afterID int64, limit int) ([]Record, error) {
	rows, err := q.Query(ctx, `SELECT `+columns+` FROM `+l.table+`
		WHERE object_type = $1 AND object_id = $2 AND id > $3 ORDER BY id LIMIT $4`,
		objectType, objectID, afterID, clamp(limit))
	if err != nil {
		return nil, fmt.Errorf("audit: history %s: %w", l.source(), err)
	}
	return l.collect(rows)
}

func (l Log) source() string {
	if l.schema == "" {
		return "audit_log"
	}
	return l.schema
}

func (l Log) collect(rows pgx.Rows) ([]Record, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Record, error) {
		r := Record{Source: l.schema}
		var txid string
		var details []byte
		err := row.Scan(&r.ID, &txid, &r.OccurredAt, &r.Action, &r.ObjectType, &r.ObjectID, &r.Actor.UserID,
			&r.Actor.Username, &r.Actor.KeyID, &r.Actor.Service, &r.RequestID, &details)
		if err != nil {
			return r, err
		}
		if r.TxID, err = strconv.ParseUint(txid, 10, 64); err != nil {
			return r, fmt.Errorf("audit: txid %q: %w", txid, err)
		}
		r.Details = details
		return r, nil
	})
}

func splitActions(actions []string) (exact, prefixes []string) {
	exact, prefixes = []string{}, []string{}
	for _, a := range actions {
		if p, ok := strings.CutSuffix(a, "*"); ok {
			prefixes = append(prefixes, p)
		} else {
			exact = append(exact, a)
		}
	}
	return exact, prefixes
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func clamp(limit int) int {
	if limit <= 0 || limit > MaxLimit {
		return MaxLimit
	}
	return limit
}

// FirstDetails returns, for each of ids that has one, the details of the
// earliest entry of action about it (e.g. the groups a purged document was
// created with: its entries outlive its rows).
func (l Log) FirstDetails(ctx context.Context, q Querier, action string, ids []int64) (map[int64]json.RawMessage, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT ON (object_id) object_id, details FROM `+l.table+`
		WHERE object_type = $1 AND action = $2 AND object_id = ANY($3) ORDER BY object_id, id`, ObjectType(action), action, ids)
	if err != nil {
		return nil, fmt.Errorf("audit: first %s: %w", action, err)
	}
	defer rows.Close()
	out := map[int64]json.RawMessage{}
	for rows.Next() {
		var id int64
		var d []byte
		if err := rows.Scan(&id, &d); err != nil {
			return nil, err
		}
		out[id] = d
	}
	return out, rows.Err()
}
