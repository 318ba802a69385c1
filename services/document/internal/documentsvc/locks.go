package documentsvc

// Locks that cannot strand a document (docs/design.md §4): a lock can
// expire (Deps.LockTTL, DOCREPO_LOCK_TTL) and an operator can break one
// (BreakLock, docrepoctl lock break), whoever holds it — a user who left,
// whose keys were revoked. Both release the lock like an unlock does (rev
// bumped, an unlocked event) and record it in the audit log.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

// maxBreakReason bounds BreakLock's reason, in characters.
const maxBreakReason = 500

// maxListLocks is ListLocks' largest (and default) page.
const maxListLocks = 1000

// lockExpiredSQL is the predicate "document alias d holds a lock older than
// the TTL", the TTL in seconds read from $at (0: locks never expire).
func lockExpiredSQL(at int) string {
	return fmt.Sprintf(`(d.locked_by IS NOT NULL AND $%[1]d::float8 > 0 AND d.locked_at <= now() - make_interval(secs => $%[1]d::float8))`, at)
}

// lockHeldSQL is the predicate "document alias d holds a lock that has not
// expired" (lockExpiredSQL's TTL argument at): what every read reports as
// islocked, so that an expired lock reads as gone at once, as writes treat
// it, not only once the sweeper (ExpireLocks) released it.
func lockHeldSQL(at int) string {
	return `(d.locked_by IS NOT NULL AND NOT ` + lockExpiredSQL(at) + `)`
}

// ttlSeconds is the lock TTL as lockExpiredSQL's argument.
func (s *Service) ttlSeconds() float64 { return s.lockTTL.Seconds() }

// lockRow is the lock of a document row a write read FOR UPDATE with
// lockColumns: the writes that read more than lockDoc does in the same
// query (bulk set_status, delete) use it instead.
type lockRow struct {
	id, rev  int64
	lockedBy *int64
	name     *string
	at       *time.Time
	expired  bool
}

// lockColumns are the columns lockRow.dest scans, the TTL in seconds read
// from $at.
func lockColumns(at int) string {
	return `d.locked_by, d.locked_by_name, d.locked_at, ` + lockExpiredSQL(at)
}

func (l *lockRow) dest() []any { return []any{&l.lockedBy, &l.name, &l.at, &l.expired} }

// holds refuses the write (423) while the row's lock holds, and releases
// a lock that outlived the TTL first (l.rev follows the release's bump).
func (s *Service) holds(ctx context.Context, tx pgx.Tx, l *lockRow) error {
	if l.lockedBy == nil {
		return nil
	}
	if !l.expired {
		return errLocked()
	}
	st := docState{id: l.id, rev: l.rev, lockedBy: l.lockedBy, lockExpired: true}
	if l.name != nil {
		st.lockedByName = *l.name
	}
	if l.at != nil {
		st.lockedAt = *l.at
	}
	if err := s.expireLock(ctx, tx, &st); err != nil {
		return err
	}
	l.lockedBy = nil
	l.rev++
	return nil
}

// heldLock is a lock as stored.
type heldLock struct {
	userID   int64
	username string
	lockedAt time.Time
}

func (l heldLock) details() map[string]any {
	return map[string]any{"holder_user_id": l.userID, "holder_username": l.username, "locked_at": l.lockedAt.UTC().Format(time.RFC3339Nano)}
}

// releaseLock clears document id's lock inside tx as a change (rev bumped,
// an unlocked event) and records action in the audit log with the lock as
// it was and extra details.
func releaseLock(ctx context.Context, tx pgx.Tx, id int64, l heldLock, action string, extra map[string]any) error {
	if _, err := tx.Exec(ctx, `UPDATE documents SET locked_by = NULL, locked_by_name = NULL, locked_at = NULL WHERE id = $1`, id); err != nil {
		return err
	}
	if _, err := bump(ctx, tx, id, kindUnlocked); err != nil {
		return err
	}
	details := l.details()
	for k, v := range extra {
		details[k] = v
	}
	return audit.Append(ctx, tx, audit.Entry{Action: action, ObjectID: id, Details: details, Service: Schema})
}

// expireLock releases st's lock inside tx when it outlived the TTL, so that
// a write finds a document whose lock expired unlocked (the sweeper,
// ExpireLocks, releases the others).
func (s *Service) expireLock(ctx context.Context, tx pgx.Tx, st *docState) error {
	if st.lockedBy == nil || !st.lockExpired {
		return nil
	}
	l := heldLock{userID: *st.lockedBy, username: st.lockedByName, lockedAt: st.lockedAt}
	if err := releaseLock(ctx, tx, st.id, l, "document.lock_expired", map[string]any{"ttl": s.lockTTL.String()}); err != nil {
		return err
	}
	st.lockedBy = nil
	return nil
}

// ExpireLocks releases every lock older than the TTL, in batches, as the
// document service itself, and returns how many it released (documents in
// the trash keep theirs until they are restored). Without a TTL it does
// nothing.
func (s *Service) ExpireLocks(ctx context.Context) (int, error) {
	if s.lockTTL <= 0 {
		return 0, nil
	}
	ctx = audit.WithService(ctx, Schema)
	total := 0
	for {
		n := 0
		err := s.inTx(ctx, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT d.id, d.locked_by, d.locked_by_name, d.locked_at FROM documents d
				WHERE `+lockExpiredSQL(1)+` AND d.deleted_at IS NULL ORDER BY d.locked_at LIMIT 100 FOR UPDATE SKIP LOCKED`, s.ttlSeconds())
			if err != nil {
				return err
			}
			type expired struct {
				id int64
				heldLock
			}
			var batch []expired
			for rows.Next() {
				var e expired
				var name *string
				if err := rows.Scan(&e.id, &e.userID, &name, &e.lockedAt); err != nil {
					rows.Close()
					return err
				}
				if name != nil {
					e.username = *name
				}
				batch = append(batch, e)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, e := range batch {
				if err := releaseLock(ctx, tx, e.id, e.heldLock, "document.lock_expired", map[string]any{"ttl": s.lockTTL.String()}); err != nil {
					return err
				}
			}
			n = len(batch)
			return nil
		})
		total += n
		if err != nil || n < 100 {
			return total, err
		}
	}
}

// lockSweepInterval is how often ExpireLocks runs for a TTL: a tenth of
// it, between a second and a minute.
func lockSweepInterval(ttl time.Duration) time.Duration {
	return min(max(ttl/10, time.Second), time.Minute)
}

// lockSweepLoop runs ExpireLocks every lockSweepInterval until ctx is done.
func lockSweepLoop(ctx context.Context, s *Service, log *slog.Logger) error {
	for {
		if n, err := s.ExpireLocks(ctx); err != nil && ctx.Err() == nil {
			log.Warn("releasing expired locks failed; will retry", "error", err, "released", n)
		} else if n > 0 {
			log.Info("released expired locks", "released", n, "ttl", s.lockTTL)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(lockSweepInterval(s.lockTTL)):
		}
	}
}

// lockOf is the DocumentLock of a held lock.
func (s *Service) lockOf(docID int64, l heldLock) *documentv1.DocumentLock {
	out := &documentv1.DocumentLock{DocId: docID, HolderUserId: l.userID, HolderUsername: l.username, LockedAt: ts(&l.lockedAt)}
	if s.lockTTL > 0 {
		exp := l.lockedAt.Add(s.lockTTL)
		out.ExpiresAt = ts(&exp)
	}
	return out
}

// BreakLock releases a document's lock whoever holds it (an operator's
// service credential with scope admin; docrepoctl lock break). The
// document need not be visible to the caller: a service credential has no
// groups, and the operator learns only who holds the lock. A document that
// is not locked is a 409; one in the trash is 404, like for every other
// write.
func (s *Service) BreakLock(ctx context.Context, req *documentv1.BreakLockRequest) (*documentv1.BreakLockResponse, error) {
	if _, err := auth.Caller(ctx); err != nil {
		return nil, err
	}
	if err := checkDocID(req.GetDocId()); err != nil {
		return nil, err
	}
	reason := strings.TrimSpace(req.GetReason())
	if reason == "" {
		return nil, apierr.Invalid("Invalid value for reason: say why the lock is broken (it is recorded)")
	}
	if utf8.RuneCountInString(reason) > maxBreakReason || !utf8.ValidString(reason) {
		return nil, apierr.Invalid("Invalid value for reason: at most %d characters of UTF-8", maxBreakReason)
	}
	out := &documentv1.BreakLockResponse{}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var (
			holder *int64
			name   *string
			at     *time.Time
		)
		err := tx.QueryRow(ctx, `SELECT locked_by, locked_by_name, locked_at FROM documents WHERE id = $1 AND deleted_at IS NULL FOR UPDATE`,
			req.GetDocId()).Scan(&holder, &name, &at)
		if errors.Is(err, pgx.ErrNoRows) {
			return errDocNotFound()
		}
		if err != nil {
			return err
		}
		if holder == nil {
			return apierr.Conflict("Document is not locked")
		}
		l := heldLock{userID: *holder}
		if name != nil {
			l.username = *name
		}
		if at != nil {
			l.lockedAt = *at
		}
		if err := releaseLock(ctx, tx, req.GetDocId(), l, "document.lock_broken", map[string]any{"reason": reason}); err != nil {
			return err
		}
		out.Broken = s.lockOf(req.GetDocId(), l)
		out.Document, err = s.loadMetadata(ctx, tx, req.GetDocId())
		return err
	})
	if err != nil {
		return nil, err
	}
	s.log.InfoContext(ctx, "lock broken", "doc_id", req.GetDocId(), "holder", out.Broken.GetHolderUsername(), "reason", reason)
	return out, nil
}

// ListLocks pages through the locked documents in id order (scope admin;
// docrepoctl lock list). Locks past the TTL that the sweeper has not
// released yet are listed, with their expiry in the past.
func (s *Service) ListLocks(ctx context.Context, req *documentv1.ListLocksRequest) (*documentv1.ListLocksResponse, error) {
	if _, err := auth.Caller(ctx); err != nil {
		return nil, err
	}
	limit := int(req.GetLimit())
	if limit < 0 {
		return nil, apierr.Invalid("Invalid value for limit: must not be negative")
	}
	if limit == 0 || limit > maxListLocks {
		limit = maxListLocks
	}
	var after int64
	if t := req.GetPageToken(); t != "" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil || n < 0 {
			return nil, apierr.Invalid("Invalid value for page_token")
		}
		after = n
	}
	rows, err := s.pool.Query(ctx, `SELECT id, locked_by, coalesce(locked_by_name, ''), locked_at FROM documents
		WHERE locked_by IS NOT NULL AND deleted_at IS NULL AND id > $1 ORDER BY id LIMIT $2`, after, limit+1)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	defer rows.Close()
	out := &documentv1.ListLocksResponse{}
	for rows.Next() {
		var id int64
		var l heldLock
		var at *time.Time
		if err := rows.Scan(&id, &l.userID, &l.username, &at); err != nil {
			return nil, apierr.Internal(err)
		}
		if at != nil {
			l.lockedAt = *at
		}
		if len(out.Locks) == limit {
			out.NextPageToken = strconv.FormatInt(out.Locks[limit-1].GetDocId(), 10)
			break
		}
		out.Locks = append(out.Locks, s.lockOf(id, l))
	}
	if err := rows.Err(); err != nil {
		return nil, apierr.Internal(err)
	}
	return out, nil
}
