package documentsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/blob"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	schemav1 "github.com/docrepo/docrepo/pkg/gen/docrepo/schema/v1"
	"github.com/docrepo/docrepo/pkg/outbox"
	"github.com/docrepo/docrepo/pkg/visibility"
)

// FolderClient is what the service needs of the folder service.
type FolderClient interface {
	GetFolders(ctx context.Context, in *folderv1.GetFoldersRequest, opts ...grpc.CallOption) (*folderv1.GetFoldersResponse, error)
}

// SchemaClient is what the service needs of the schema service.
type SchemaClient interface {
	GetDocType(ctx context.Context, in *schemav1.GetDocTypeRequest, opts ...grpc.CallOption) (*schemav1.GetDocTypeResponse, error)
	GetTemplate(ctx context.Context, in *schemav1.GetTemplateRequest, opts ...grpc.CallOption) (*schemav1.GetTemplateResponse, error)
}

// Deps are the parts a Service works with.
type Deps struct {
	Pool    *pgxpool.Pool
	Store   blob.Store
	Folders FolderClient
	Schema  SchemaClient
	// MaxUploadBytes is the largest accepted file (413 above); 0: no limit.
	MaxUploadBytes int64
	// PageCountMaxBytes is the largest PDF whose pages are counted at
	// upload (the PDF parser holds a file's streams in memory); 0 means
	// DefaultPageCountMaxBytes.
	PageCountMaxBytes int64
	// PageCountTimeout bounds page counting, the wait for a turn included;
	// 0 means 60 s.
	PageCountTimeout time.Duration
	// PageCountConcurrency bounds how many PDFs are counted at once (each
	// may hold up to PageCountMaxBytes of parsed streams); 0 means the
	// number of CPUs.
	PageCountConcurrency int
	// PendingTouch is how often an upload in progress renews its pending
	// blob record, so that the sweeper (SweepPending) never takes an
	// upload still streaming for a dead one; it must be well below the
	// sweeper's age. 0 means DefaultPendingTouch.
	PendingTouch time.Duration
	// ValuesTimeout bounds one distinct-values listing (504 past it);
	// ValuesPerCaller how many one caller runs at once (429 beyond). 0:
	// the defaults (valuelimit.go).
	ValuesTimeout   time.Duration
	ValuesPerCaller int
	// StoreID names the blob store (its kind and location): a purge
	// records it, and only a process on the same store resumes the purge
	// (trash.go). Processes sharing a database share a store in a real
	// deployment; "" is fine for one.
	StoreID string
	// TrashRetention is how long a deleted document stays in the trash
	// before the sweeper purges it; 0 means DefaultTrashRetention.
	TrashRetention time.Duration
	// LockTTL is how long a lock holds before it expires (locks.go); 0:
	// until its holder unlocks it or an operator breaks it.
	LockTTL time.Duration
	Logger  *slog.Logger
}

// DefaultPendingTouch is the default of Deps.PendingTouch.
const DefaultPendingTouch = time.Minute

// DefaultPageCountMaxBytes is the default of Deps.PageCountMaxBytes.
const DefaultPageCountMaxBytes = 256 << 20

// Service implements documentv1.DocumentServiceServer.
type Service struct {
	documentv1.UnimplementedDocumentServiceServer
	documentv1.UnimplementedDocumentLifecycleServiceServer
	pool    *pgxpool.Pool
	store   blob.Store
	folders FolderClient
	schema  SchemaClient
	maxSize int64
	log     *slog.Logger

	pageCountMax     int64
	pageCountTimeout time.Duration
	pendingTouch     time.Duration
	// pageCounts holds a token per page count in progress.
	pageCounts chan struct{}
	// knownTypes holds doc type names the schema service confirmed (see
	// checkDocType); visibleFolders the folders the folder service showed
	// to a set of groups (see checkFolder).
	knownTypes     answers
	visibleFolders answers
	// values bounds the distinct-values listings (valuelimit.go).
	values *valueLimiter
	// trashRetention and storeID are Deps.TrashRetention and
	// Deps.StoreID (trash.go).
	trashRetention time.Duration
	storeID        string
	// lockTTL is how long a lock holds (0: until unlocked or broken).
	lockTTL time.Duration
	now     func() time.Time
}

// NewService returns the document service.
func NewService(d Deps) *Service {
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Service{pool: d.Pool, store: d.Store, folders: d.Folders, schema: d.Schema, maxSize: d.MaxUploadBytes, log: log,
		pageCountMax: d.PageCountMaxBytes, pageCountTimeout: d.PageCountTimeout, pendingTouch: d.PendingTouch, now: time.Now, lockTTL: max(d.LockTTL, 0),
		knownTypes:     answers{ttl: knownTypeTTL, max: maxAnswers},
		visibleFolders: answers{ttl: visibleFolderTTL, max: maxAnswers}}
	if s.pageCountMax <= 0 {
		s.pageCountMax = DefaultPageCountMaxBytes
	}
	if s.pageCountTimeout <= 0 {
		s.pageCountTimeout = time.Minute
	}
	s.storeID = d.StoreID
	if s.trashRetention = d.TrashRetention; s.trashRetention <= 0 {
		s.trashRetention = DefaultTrashRetention
	}
	if s.pendingTouch <= 0 {
		s.pendingTouch = DefaultPendingTouch
	}
	n := d.PageCountConcurrency
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	s.pageCounts = make(chan struct{}, n)
	poolConns := 8
	if d.Pool != nil {
		poolConns = int(d.Pool.Config().MaxConns)
	}
	s.values = newValueLimiter(d.ValuesTimeout, d.ValuesPerCaller, poolConns)
	return s
}

// Error details used in several places.
func errDocNotFound() error    { return apierr.NotFound("Document not found") }
func errFolderNotFound() error { return apierr.NotFound("Folder not found") }
func errLocked() error         { return apierr.Locked("Document is locked") }
func errLockedByOther() error  { return apierr.Locked("Document is locked by another user") }
func errTemplateNotFound() error {
	return apierr.NotFound("Custom field template not found")
}

// checkDocID refuses ids no document can have (docs/api.md §4.4: 400 for an
// invalid docID).
func checkDocID(id int64) error {
	if id <= 0 {
		return apierr.Invalid("Invalid value for doc_id: must be a positive integer")
	}
	return nil
}

// documentGroups lists each document's groups: a document is visible to
// the callers sharing one.
var documentGroups = visibility.Groups{Table: "document_groups", Key: "doc_id"}

// visibleSQL is the predicate "document alias d is visible to vis", vis's
// arguments (Unrestricted, GroupIDs) read from $at and $at+1. Every query
// touching a caller's documents uses it. A document in the trash is
// visible to nobody, internal callers included (the indexer then drops
// it): only the trash's own queries (trashVisibleSQL) see it.
func visibleSQL(vis visibility.Viewer, at int) string {
	return "(d.deleted_at IS NULL AND " + vis.SQL(documentGroups, "d", at) + ")"
}

// trashVisibleSQL is the predicate "document alias d is in the trash,
// not being purged, and shares a group with vis" (arguments as for
// visibleSQL): the documents the trash lists and restores.
func trashVisibleSQL(vis visibility.Viewer, at int) string {
	return "(d.deleted_at IS NOT NULL AND d.purging_at IS NULL AND " + vis.SQL(documentGroups, "d", at) + ")"
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// docState is the part of a document row writes need.
type docState struct {
	id       int64
	rev      int64
	lockedBy *int64
	// The lock's holder name and time, and whether it outlived the TTL.
	lockedByName string
	lockedAt     time.Time
	lockExpired  bool
}

// lockDoc loads a visible document for update inside tx. A lock that
// outlived the TTL is released on the way (expireLock), so st.lockedBy is
// only ever a lock that holds.
func (s *Service) lockDoc(ctx context.Context, tx pgx.Tx, p *auth.Principal, id int64) (docState, error) {
	st := docState{id: id}
	vis := visibility.Of(p)
	var name *string
	var at *time.Time
	err := tx.QueryRow(ctx, `SELECT d.rev, d.locked_by, d.locked_by_name, d.locked_at, `+lockExpiredSQL(4)+` FROM documents d
		WHERE d.id = $3 AND `+visibleSQL(vis, 1)+` FOR UPDATE`, vis.Unrestricted, vis.GroupIDs, id, s.ttlSeconds()).Scan(
		&st.rev, &st.lockedBy, &name, &at, &st.lockExpired)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, errDocNotFound()
	}
	if err != nil {
		return st, err
	}
	if name != nil {
		st.lockedByName = *name
	}
	if at != nil {
		st.lockedAt = *at
	}
	return st, s.expireLock(ctx, tx, &st)
}

// checkVisible reports 404 unless the caller can see the document.
func checkVisible(ctx context.Context, q querier, p *auth.Principal, id int64) error {
	var ok bool
	vis := visibility.Of(p)
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM documents d WHERE d.id = $3 AND `+visibleSQL(vis, 1)+`)`,
		vis.Unrestricted, vis.GroupIDs, id).Scan(&ok); err != nil {
		return apierr.Internal(err)
	}
	if !ok {
		return errDocNotFound()
	}
	return nil
}

// bump increments the document's revision and enqueues the event of kind
// in the same transaction. It returns the new revision.
func bump(ctx context.Context, tx pgx.Tx, id int64, kind string) (int64, error) {
	var rev int64
	if err := tx.QueryRow(ctx, `UPDATE documents SET rev = rev + 1, updated_at = now() WHERE id = $1 RETURNING rev`, id).Scan(&rev); err != nil {
		return 0, err
	}
	return rev, insertEvent(ctx, tx, id, rev, kind)
}

// insertEvent enqueues a document event of revision rev inside tx.
func insertEvent(ctx context.Context, tx pgx.Tx, id, rev int64, kind string) error {
	return outbox.Insert(ctx, tx, outbox.Event{Aggregate: outbox.AggregateDocument, AggregateID: id, Kind: kind, Rev: rev})
}

// Event kinds of documents.
const (
	kindCreated             = "created"
	kindUpdated             = "updated"
	kindFileReplaced        = "file_replaced"
	kindLocked              = "locked"
	kindUnlocked            = "unlocked"
	kindCustomFieldsChanged = "customfields_changed"
	kindFoldersChanged      = "folders_changed"
	kindDeleted             = "deleted"
	kindRestored            = "restored"
	kindPurged              = "purged"
)

// inTx runs fn in a transaction, passing *apierr.Error values through and
// wrapping anything else as an internal error. After a commit it wakes the
// outbox relay, which publishes the events fn inserted (if any) at once.
func (s *Service) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, s.pool, fn)
	if err == nil {
		outbox.Committed(s.pool)
	}
	return internal(err)
}

// readTx runs fn in a read-only repeatable-read transaction, so that the
// several queries of one read see one snapshot.
func (s *Service) readTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
	return internal(err)
}

// internal keeps domain errors and gRPC statuses, and hides anything else
// behind a 500.
func internal(err error) error {
	if err == nil {
		return nil
	}
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return apierr.Internal(err)
}

// downstream turns an error of a call to another service into the error
// this service returns: NotFound becomes notFound, unavailability stays
// 503, anything else keeps its status.
func downstream(err error, what string, notFound error) error {
	st, ok := status.FromError(err)
	if !ok {
		return apierr.Internal(fmt.Errorf("%s: %w", what, err))
	}
	switch st.Code() {
	case codes.NotFound:
		return notFound
	case codes.Unavailable:
		return apierr.Unavailable("%s is unavailable", what)
	case codes.Canceled, codes.DeadlineExceeded:
		return err
	}
	return err
}

func ts(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}
