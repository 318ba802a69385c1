package documentsvc_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
	"github.com/docrepo/docrepo/services/document/internal/documentsvc"
)

// lockFixture is a document service with two users of one group and a
// document they both see.
type lockFixture struct {
	pool       *pgxpool.Pool
	svc        *documentsvc.Service
	alice, bob context.Context
	admin      context.Context
	aliceKeyID int64
	docID      int64
}

func newLockFixture(t *testing.T, ttl time.Duration) *lockFixture {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t, documentsvc.Schema, documentsvc.Migrations()...)
	ids := identity.NewStore(pool)
	f := &lockFixture{pool: pool, svc: documentsvc.NewService(documentsvc.Deps{Pool: pool, LockTTL: ttl})}
	principal := func(name string) *auth.Principal {
		u, err := ids.CreateUser(ctx, name, []string{"editors"})
		if err != nil {
			t.Fatal(err)
		}
		_, key, err := ids.CreateKey(ctx, name, []string{auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return &auth.Principal{KeyID: key.ID, UserID: u.ID, Username: name, GroupIDs: []int64{u.Groups[0].ID},
			Scopes: []string{auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite}}
	}
	a, b := principal("alice"), principal("bob")
	f.aliceKeyID = a.KeyID
	f.alice, f.bob = auth.WithPrincipal(ctx, a), auth.WithPrincipal(ctx, b)
	f.admin = auth.WithPrincipal(ctx, &auth.Principal{KeyID: 99, Service: "ops", Scopes: []string{auth.ScopeAdmin}})
	if err := pool.QueryRow(ctx, `WITH d AS (
			INSERT INTO documents (description, entry_person_id, entry_person) VALUES ('memo', $1, 'alice') RETURNING id)
		INSERT INTO document_groups (doc_id, group_id) SELECT d.id, $2 FROM d RETURNING doc_id`, a.UserID, a.GroupIDs[0]).Scan(&f.docID); err != nil {
		t.Fatal(err)
	}
	return f
}

// patch changes the document's description as the caller of ctx.
func (f *lockFixture) patch(ctx context.Context, desc string) error {
	_, err := f.svc.UpdateDocument(ctx, &documentv1.UpdateDocumentRequest{DocId: f.docID, Description: &desc})
	return err
}

func (f *lockFixture) lock(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := f.svc.LockDocument(ctx, &documentv1.LockDocumentRequest{DocId: f.docID}); err != nil {
		t.Fatal(err)
	}
}

// lockedSince moves the document's lock back in time.
func (f *lockFixture) lockedSince(t *testing.T, ago time.Duration) {
	t.Helper()
	if _, err := f.pool.Exec(context.Background(), `UPDATE documents SET locked_at = now() - make_interval(secs => $2) WHERE id = $1`,
		f.docID, ago.Seconds()); err != nil {
		t.Fatal(err)
	}
}

// auditEntries lists the document's audit entries of action, details decoded.
func (f *lockFixture) auditEntries(t *testing.T, action string) []map[string]any {
	t.Helper()
	rows, err := f.pool.Query(context.Background(), `SELECT details, actor_service FROM audit_log WHERE object_id = $1 AND action = $2 ORDER BY id`,
		f.docID, action)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var raw []byte
		var service string
		if err := rows.Scan(&raw, &service); err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		m["actor_service"] = service
		out = append(out, m)
	}
	return out
}

// unlockedEvents counts the document's unlocked events in the outbox.
func (f *lockFixture) unlockedEvents(t *testing.T) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE aggregate_id = $1 AND kind = 'unlocked'`,
		f.docID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *lockFixture) islocked(t *testing.T) bool {
	t.Helper()
	var locked bool
	if err := f.pool.QueryRow(context.Background(), `SELECT locked_by IS NOT NULL FROM documents WHERE id = $1`, f.docID).Scan(&locked); err != nil {
		t.Fatal(err)
	}
	return locked
}

// A user whose keys were revoked holds a lock: nobody else can change the
// document until an operator breaks the lock, which is recorded (holder,
// reason, operator's credential) and published as an unlock.
func TestOperatorBreaksTheLockOfARevokedUser(t *testing.T) {
	f := newLockFixture(t, 0)
	f.lock(t, f.alice)
	if err := identity.NewStore(f.pool).RevokeKey(context.Background(), f.aliceKeyID); err != nil {
		t.Fatal(err)
	}
	if err := f.patch(f.bob, "bob's"); !apierr.IsKind(err, apierr.KindLocked) {
		t.Fatalf("PATCH of a locked document = %v, want 423", err)
	}

	refusals := []struct {
		name   string
		req    *documentv1.BreakLockRequest
		status codes.Code
	}{
		{name: "no reason", req: &documentv1.BreakLockRequest{DocId: f.docID, Reason: "  "}, status: codes.InvalidArgument},
		{name: "reason too long", req: &documentv1.BreakLockRequest{DocId: f.docID, Reason: string(make([]byte, 501))}, status: codes.InvalidArgument},
		{name: "invalid id", req: &documentv1.BreakLockRequest{DocId: 0, Reason: "left"}, status: codes.InvalidArgument},
		{name: "no such document", req: &documentv1.BreakLockRequest{DocId: f.docID + 1000, Reason: "left"}, status: codes.NotFound},
	}
	for _, tc := range refusals {
		if _, err := f.svc.BreakLock(f.admin, tc.req); status.Code(err) != tc.status {
			t.Errorf("%s: BreakLock = %v, want %v", tc.name, err, tc.status)
		}
	}

	list, err := f.svc.ListLocks(f.admin, &documentv1.ListLocksRequest{})
	if err != nil || len(list.GetLocks()) != 1 || list.GetLocks()[0].GetHolderUsername() != "alice" || list.GetLocks()[0].GetExpiresAt() != nil {
		t.Fatalf("ListLocks = %v, %v; want alice's lock, without expiry", list, err)
	}

	resp, err := f.svc.BreakLock(f.admin, &documentv1.BreakLockRequest{DocId: f.docID, Reason: "alice left"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetBroken().GetHolderUsername() != "alice" || resp.GetDocument().GetIslocked() {
		t.Fatalf("BreakLock = %v", resp)
	}
	entries := f.auditEntries(t, "document.lock_broken")
	if len(entries) != 1 || entries[0]["reason"] != "alice left" || entries[0]["holder_username"] != "alice" || entries[0]["actor_service"] != "ops" {
		t.Fatalf("audit entries = %v", entries)
	}
	if n := f.unlockedEvents(t); n != 1 {
		t.Fatalf("unlocked events = %d, want 1", n)
	}
	if err := f.patch(f.bob, "bob's"); err != nil {
		t.Fatalf("PATCH after the break = %v", err)
	}
	if _, err := f.svc.BreakLock(f.admin, &documentv1.BreakLockRequest{DocId: f.docID, Reason: "again"}); status.Code(err) != codes.FailedPrecondition && !apierr.IsKind(err, apierr.KindConflict) {
		t.Fatalf("breaking an unlocked document = %v, want 409", err)
	}
}

// With a lock TTL, a lock holds until it is older than the TTL: then any
// write of anyone (PATCH, a bulk status change, a delete) finds the
// document unlocked (the lock is released as a change, and recorded), and
// the holder locking again renews it.
func TestLocksExpireAfterTheTTL(t *testing.T) {
	const ttl = time.Hour
	patch := func(f *lockFixture) error { return f.patch(f.bob, "bob's") }
	setStatus := func(f *lockFixture) error {
		status := "done"
		resp, err := f.svc.BulkDocuments(f.bob, &documentv1.BulkDocumentsRequest{Action: "set_status", DocIds: []int64{f.docID}, DocStatus: &status})
		if err != nil {
			return err
		}
		if r := resp.GetResults()[0]; r.GetStatus() == 423 {
			return apierr.Locked("%s", r.GetDetail())
		} else if r.GetStatus() != 200 {
			return apierr.Invalid("bulk result %d %s", r.GetStatus(), r.GetDetail())
		}
		return nil
	}
	del := func(f *lockFixture) error {
		_, err := f.svc.DeleteDocument(f.bob, &documentv1.DeleteDocumentRequest{DocId: f.docID})
		return err
	}
	tests := []struct {
		name        string
		write       func(f *lockFixture) error
		ago         time.Duration
		relock      bool // the holder locks again before bob writes
		wantRefused bool
	}{
		{name: "young lock holds", write: patch, ago: 59 * time.Minute, wantRefused: true},
		{name: "expired lock is released", write: patch, ago: 61 * time.Minute, wantRefused: false},
		{name: "renewed lock holds", write: patch, ago: 61 * time.Minute, relock: true, wantRefused: true},
		{name: "young lock holds a bulk status change", write: setStatus, ago: 59 * time.Minute, wantRefused: true},
		{name: "expired lock lets a bulk status change through", write: setStatus, ago: 61 * time.Minute, wantRefused: false},
		{name: "young lock holds a delete", write: del, ago: 59 * time.Minute, wantRefused: true},
		{name: "expired lock lets a delete through", write: del, ago: 61 * time.Minute, wantRefused: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newLockFixture(t, ttl)
			f.lock(t, f.alice)
			f.lockedSince(t, tc.ago)
			if tc.relock {
				f.lock(t, f.alice)
			}
			err := tc.write(f)
			if refused := apierr.IsKind(err, apierr.KindLocked); refused != tc.wantRefused || (!refused && err != nil) {
				t.Fatalf("PATCH = %v, want refused %v", err, tc.wantRefused)
			}
			if tc.wantRefused {
				return
			}
			if f.islocked(t) || f.unlockedEvents(t) != 1 {
				t.Fatalf("after the write: locked %v, unlocked events %d", f.islocked(t), f.unlockedEvents(t))
			}
			if e := f.auditEntries(t, "document.lock_expired"); len(e) != 1 || e[0]["holder_username"] != "alice" || e[0]["ttl"] != "1h0m0s" {
				t.Fatalf("audit entries = %v", e)
			}
		})
	}
}

// The sweeper releases the locks past the TTL, as the document service,
// and leaves the others.
func TestExpireLocksReleasesOnlyExpiredLocks(t *testing.T) {
	f := newLockFixture(t, time.Hour)
	if n, err := f.svc.ExpireLocks(context.Background()); err != nil || n != 0 {
		t.Fatalf("ExpireLocks without locks = %d, %v", n, err)
	}
	f.lock(t, f.alice)
	if n, err := f.svc.ExpireLocks(context.Background()); err != nil || n != 0 || !f.islocked(t) {
		t.Fatalf("ExpireLocks of a young lock = %d, %v", n, err)
	}
	list, err := f.svc.ListLocks(f.admin, &documentv1.ListLocksRequest{})
	if err != nil || len(list.GetLocks()) != 1 {
		t.Fatalf("ListLocks = %v, %v", list, err)
	}
	if exp := list.GetLocks()[0].GetExpiresAt().AsTime().Sub(list.GetLocks()[0].GetLockedAt().AsTime()); exp != time.Hour {
		t.Fatalf("expiry - locked at = %v, want the TTL", exp)
	}
	f.lockedSince(t, 2*time.Hour)
	if n, err := f.svc.ExpireLocks(context.Background()); err != nil || n != 1 || f.islocked(t) {
		t.Fatalf("ExpireLocks of an expired lock = %d, %v (still locked: %v)", n, err, f.islocked(t))
	}
	if e := f.auditEntries(t, "document.lock_expired"); len(e) != 1 || e[0]["actor_service"] != "document" {
		t.Fatalf("audit entries = %v", e)
	}
	// Without a TTL nothing expires.
	g := newLockFixture(t, 0)
	g.lock(t, g.alice)
	g.lockedSince(t, 1000*time.Hour)
	if n, err := g.svc.ExpireLocks(context.Background()); err != nil || n != 0 || !g.islocked(t) {
		t.Fatalf("ExpireLocks without a TTL = %d, %v", n, err)
	}
	if err := g.patch(g.bob, "bob's"); !apierr.IsKind(err, apierr.KindLocked) {
		t.Fatalf("PATCH under an old lock without a TTL = %v, want 423", err)
	}
}

// Only a service credential with scope admin reaches BreakLock and
// ListLocks: a user's key is refused over gRPC.
func TestBreakLockNeedsTheAdminScope(t *testing.T) {
	r := runWithNATS(t)
	if _, err := r.docs.LockDocument(r.callCtx, &documentv1.LockDocumentRequest{DocId: r.docID}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.docs.BreakLock(r.callCtx, &documentv1.BreakLockRequest{DocId: r.docID, Reason: "mine"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("BreakLock with a user's key = %v, want PermissionDenied", err)
	}
	if _, err := r.docs.ListLocks(r.callCtx, &documentv1.ListLocksRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("ListLocks with a user's key = %v, want PermissionDenied", err)
	}
	token, _, err := identity.NewStore(r.pool).CreateServiceCredential(context.Background(), "ops", []string{auth.ScopeAdmin}, 0)
	if err != nil {
		t.Fatal(err)
	}
	admin := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
	if _, err := r.docs.BreakLock(admin, &documentv1.BreakLockRequest{DocId: r.docID, Reason: "test"}); err != nil {
		t.Fatalf("BreakLock with an admin credential = %v", err)
	}
}

// A lock past the TTL reads as none on every read that reports the lock
// (GET, the indexer's reads, distinct values) at once, as the writes see
// it, before the sweeper releases it; a young lock, or any lock without a
// TTL, reads as held by its holder.
func TestReadsSeeAnExpiredLockAsGone(t *testing.T) {
	tests := []struct {
		name       string
		ttl        time.Duration
		ago        time.Duration // the lock is moved back this far
		wait       time.Duration // then the test waits this long
		wantLocked bool
	}{
		{name: "young lock", ttl: time.Hour, ago: 59 * time.Minute, wantLocked: true},
		{name: "lock past the TTL", ttl: time.Hour, ago: 61 * time.Minute, wantLocked: false},
		{name: "short TTL waited out", ttl: 200 * time.Millisecond, wait: 400 * time.Millisecond, wantLocked: false},
		{name: "no TTL", ttl: 0, ago: 1000 * time.Hour, wantLocked: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newLockFixture(t, tc.ttl)
			f.lock(t, f.alice)
			if tc.ago > 0 {
				f.lockedSince(t, tc.ago)
			}
			time.Sleep(tc.wait)
			wantHolder := ""
			if tc.wantLocked {
				wantHolder = "alice"
			}
			get, err := f.svc.GetDocument(f.bob, &documentv1.GetDocumentRequest{DocId: f.docID})
			if err != nil {
				t.Fatal(err)
			}
			if d := get.GetDocument(); d.GetIslocked() != tc.wantLocked || d.GetLockedBy() != wantHolder {
				t.Errorf("GET: islocked %v locked_by %q, want %v %q", d.GetIslocked(), d.GetLockedBy(), tc.wantLocked, wantHolder)
			}
			one, err := f.svc.GetIndexDocument(f.bob, &documentv1.GetIndexDocumentRequest{DocId: f.docID})
			if err != nil {
				t.Fatal(err)
			}
			if d := one.GetDocument().GetDocument(); d.GetIslocked() != tc.wantLocked || d.GetLockedBy() != wantHolder {
				t.Errorf("GetIndexDocument: islocked %v locked_by %q", d.GetIslocked(), d.GetLockedBy())
			}
			batch, err := f.svc.GetIndexDocuments(f.bob, &documentv1.GetIndexDocumentsRequest{DocIds: []int64{f.docID}})
			if err != nil || len(batch.GetDocuments()) != 1 {
				t.Fatalf("GetIndexDocuments = %v, %v", batch, err)
			}
			if d := batch.GetDocuments()[0].GetDocument().GetDocument(); d.GetIslocked() != tc.wantLocked || d.GetLockedBy() != wantHolder {
				t.Errorf("GetIndexDocuments: islocked %v locked_by %q", d.GetIslocked(), d.GetLockedBy())
			}
			vals, err := f.svc.ListDistinctValues(f.bob, &documentv1.ListDistinctValuesRequest{Column: "islocked"})
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{strconv.FormatBool(tc.wantLocked)}; !slices.Equal(vals.GetValues(), want) {
				t.Errorf("distinct islocked = %v, want %v", vals.GetValues(), want)
			}
			// Nothing was released: only reads ran.
			if !f.islocked(t) || f.unlockedEvents(t) != 0 {
				t.Fatalf("a read released the lock: stored lock %v, unlocked events %d", f.islocked(t), f.unlockedEvents(t))
			}
		})
	}
}
