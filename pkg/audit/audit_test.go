package audit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/logging"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

const schema = "audit_test"

func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	t.Parallel()
	return pgtest.NewPool(t, schema, Migrations(schema))
}

func appendIn(t *testing.T, ctx context.Context, pool *pgxpool.Pool, entries ...Entry) {
	t.Helper()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, e := range entries {
			if err := Append(ctx, tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("append: %v", err)
	}
}

// listAll reads the whole feed from the start, waiting up to a minute for
// want entries: the feed shows a transaction once every older one in the
// server has ended (pg_snapshot_xmin is server-wide, not per database), and
// the test server is shared with every other test process on the machine,
// some of which hold a transaction open for seconds (a lock held on
// purpose, a bulk insert, a benchmark's load).
func listAll(t *testing.T, pool *pgxpool.Pool, f Filter, want int) []Record {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		recs, err := In(schema).List(context.Background(), pool, f, Position{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) >= want || time.Now().After(deadline) {
			return recs
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAppendRecordsTheCallerTheRequestAndTheDetails(t *testing.T) {
	pool := newPool(t)
	tests := []struct {
		name  string
		ctx   context.Context
		entry Entry
		want  Actor
	}{
		{
			name:  "a user's API key",
			ctx:   auth.WithPrincipal(context.Background(), &auth.Principal{KeyID: 7, UserID: 3, Username: "alice"}),
			entry: Entry{Action: "document.updated", ObjectID: 42, Details: map[string]any{"before": map[string]any{"doc_status": "draft"}}},
			want:  Actor{UserID: 3, Username: "alice", KeyID: 7},
		},
		{
			name:  "a service credential",
			ctx:   auth.WithPrincipal(context.Background(), &auth.Principal{KeyID: 9, Username: "service:indexer", Service: "indexer"}),
			entry: Entry{Action: "document.updated", ObjectID: 42},
			want:  Actor{Username: "service:indexer", KeyID: 9, Service: "indexer"},
		},
		{
			name:  "a process acting on its own",
			ctx:   context.Background(),
			entry: Entry{Action: "document.purged", ObjectID: 42, Service: "document"},
			want:  Actor{Service: "document"},
		},
		{
			name:  "nobody named",
			ctx:   context.Background(),
			entry: Entry{Action: "folder.created", ObjectID: 5},
			want:  Actor{Service: "system"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := logging.WithRequestID(tt.ctx, "req-"+tt.name)
			appendIn(t, ctx, pool, tt.entry)
			recs := listAll(t, pool, Filter{}, i+1)
			if len(recs) != i+1 {
				t.Fatalf("%d entries, want %d", len(recs), i+1)
			}
			r := recs[i]
			if r.Action != tt.entry.Action || r.ObjectType != ObjectType(tt.entry.Action) || r.ObjectID != tt.entry.ObjectID {
				t.Errorf("entry = %s %s %d, want %s %d", r.Action, r.ObjectType, r.ObjectID, tt.entry.Action, tt.entry.ObjectID)
			}
			if r.Actor != tt.want {
				t.Errorf("actor = %+v, want %+v", r.Actor, tt.want)
			}
			if r.RequestID != "req-"+tt.name || r.Source != schema || r.OccurredAt.IsZero() {
				t.Errorf("request id %q, source %q, time %v", r.RequestID, r.Source, r.OccurredAt)
			}
			want := "{}"
			if tt.entry.Details != nil {
				b, _ := json.Marshal(tt.entry.Details)
				want = string(b)
			}
			var got, exp any
			_ = json.Unmarshal(r.Details, &got)
			_ = json.Unmarshal([]byte(want), &exp)
			if gb, _ := json.Marshal(got); string(gb) != mustJSON(exp) {
				t.Errorf("details = %s, want %s", r.Details, want)
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAppendRefusesWhatIsNotAnEntry(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	for _, e := range []Entry{
		{Action: "updated"},
		{Action: "Document.Updated"},
		{Action: "document.updated", Details: []string{"not", "an", "object"}},
		{Action: "document.updated", Details: func() {}},
	} {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return Append(ctx, tx, e) })
		if err == nil {
			t.Errorf("Append(%+v) succeeded", e)
		}
	}
}

func TestAnEntryExistsOnlyIfItsTransactionCommitted(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	errRollback := errors.New("the change failed")
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := Append(ctx, tx, Entry{Action: "document.updated", ObjectID: 1}); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	appendIn(t, ctx, pool, Entry{Action: "document.updated", ObjectID: 2})
	recs := listAll(t, pool, Filter{}, 1)
	if len(recs) != 1 || recs[0].ObjectID != 2 {
		t.Fatalf("entries %+v, want only the committed one", recs)
	}
}

// No statement can change or remove an entry, whoever runs it: the pool's
// role owns the table and still cannot.
func TestEntriesCannotBeChangedOrRemoved(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	appendIn(t, ctx, pool, Entry{Action: "document.purged", ObjectID: 1})
	for _, sql := range []string{
		`UPDATE audit_log SET action = 'document.created'`,
		`UPDATE audit_log SET details = '{}' WHERE id = -1`,
		`DELETE FROM audit_log`,
		`DELETE FROM audit_log WHERE false`,
		`TRUNCATE audit_log`,
	} {
		_, err := pool.Exec(ctx, sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" || !strings.Contains(pgErr.Message, "never changed or removed") {
			t.Errorf("%s: err = %v, want the refusal", sql, err)
		}
	}
	if recs := listAll(t, pool, Filter{}, 1); len(recs) != 1 || recs[0].Action != "document.purged" {
		t.Fatalf("entries after the attempts: %+v", recs)
	}
}

// A transaction that appended first but commits last is not skipped by a
// reader that already passed the entries committed meanwhile: the feed
// holds those back until the older transaction ends.
func TestTheFeedNeverSkipsAnEntryThatCommitsLate(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	slow, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback(ctx) //nolint:errcheck
	if err := Append(ctx, slow, Entry{Action: "document.updated", ObjectID: 1}); err != nil {
		t.Fatal(err)
	}
	appendIn(t, ctx, pool, Entry{Action: "document.updated", ObjectID: 2})

	log := In(schema)
	early, err := log.List(ctx, pool, Filter{}, Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(early) != 0 {
		t.Fatalf("while an older transaction runs the feed shows %+v, want nothing yet", early)
	}
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	recs := listAll(t, pool, Filter{}, 2)
	if len(recs) != 2 || recs[0].ObjectID != 1 || recs[1].ObjectID != 2 {
		t.Fatalf("feed = %+v, want the slow transaction's entry, then the other", recs)
	}
	// Read one at a time with the position: the same two, once each.
	var pos Position
	var seen []int64
	for range 3 {
		page, err := log.List(ctx, pool, Filter{}, pos, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			seen = append(seen, r.ObjectID)
			pos = r.Position()
		}
	}
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 2 {
		t.Fatalf("paged one by one: %v, want [1 2]", seen)
	}
}

func TestListFiltersByUserActionAndTime(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	alice := auth.WithPrincipal(ctx, &auth.Principal{UserID: 1, Username: "alice", KeyID: 1})
	bob := auth.WithPrincipal(ctx, &auth.Principal{UserID: 2, Username: "bob", KeyID: 2})
	appendIn(t, alice, pool, Entry{Action: "document.created", ObjectID: 1}, Entry{Action: "folder.created", ObjectID: 1})
	time.Sleep(20 * time.Millisecond)
	mid := time.Now()
	time.Sleep(20 * time.Millisecond)
	appendIn(t, bob, pool, Entry{Action: "document.updated", ObjectID: 1}, Entry{Action: "document.locked", ObjectID: 1})
	all := listAll(t, pool, Filter{}, 4)
	if len(all) != 4 {
		t.Fatalf("%d entries, want 4", len(all))
	}
	tests := []struct {
		name   string
		filter Filter
		want   []string
	}{
		{name: "by user", filter: Filter{User: "bob"}, want: []string{"document.updated", "document.locked"}},
		{name: "by exact action", filter: Filter{Actions: []string{"document.locked", "folder.created"}}, want: []string{"folder.created", "document.locked"}},
		{name: "by object type", filter: Filter{Actions: []string{"document.*"}}, want: []string{"document.created", "document.updated", "document.locked"}},
		{name: "since", filter: Filter{Since: mid}, want: []string{"document.updated", "document.locked"}},
		{name: "until", filter: Filter{Until: mid}, want: []string{"document.created", "folder.created"}},
		{name: "user and action", filter: Filter{User: "alice", Actions: []string{"document.*"}}, want: []string{"document.created"}},
		{name: "nobody", filter: Filter{User: "carol"}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.filter.Check(); err != nil {
				t.Fatal(err)
			}
			recs, err := In(schema).List(ctx, pool, tt.filter, Position{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.Action)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFilterCheckRefusesNonsense(t *testing.T) {
	now := time.Now()
	for _, f := range []Filter{
		{Actions: []string{"updated"}},
		{Actions: []string{"document.*x"}},
		{Actions: []string{"*"}},
		{Actions: []string{"document.up dated"}},
		{Since: now, Until: now},
	} {
		if err := f.Check(); err == nil {
			t.Errorf("Check(%+v) = nil, want an error", f)
		}
	}
	if err := (Filter{Actions: []string{"api_key.*", "document.file_replaced"}}).Check(); err != nil {
		t.Errorf("valid filter refused: %v", err)
	}
}

func TestHistoryListsOneObjectsEntriesInOrder(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	appendIn(t, ctx, pool, Entry{Action: "document.created", ObjectID: 1}, Entry{Action: "document.created", ObjectID: 2},
		Entry{Action: "folder.created", ObjectID: 1})
	appendIn(t, ctx, pool, Entry{Action: "document.updated", ObjectID: 1})
	appendIn(t, ctx, pool, Entry{Action: "document.locked", ObjectID: 1})
	log := In(schema)
	var got []string
	var after int64
	for {
		page, err := log.History(ctx, pool, "document", 1, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, r := range page {
			got = append(got, r.Action)
			after = r.ID
		}
	}
	if want := "document.created,document.updated,document.locked"; strings.Join(got, ",") != want {
		t.Fatalf("history = %v, want %s", got, want)
	}
}
