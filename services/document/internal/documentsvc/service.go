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
	Logger               *slog.Logger
}

// DefaultPageCountMaxBytes is the default of Deps.PageCountMaxBytes.
const DefaultPageCountMaxBytes = 256 << 20

// Service implements documentv1.DocumentServiceServer.
type Service struct {
	documentv1.UnimplementedDocumentServiceServer
	pool    *pgxpool.Pool
	store   blob.Store
	folders FolderClient
	schema  SchemaClient
	maxSize int64
	log     *slog.Logger

	pageCountMax     int64
	pageCountTimeout time.Duration
	// pageCounts holds a token per page count in progress.
	pageCounts chan struct{}
	// knownTypes holds doc type names the schema service confirmed (see
	// checkDocType); visibleFolders the folders the folder service showed
	// to a set of groups (see checkFolder).
	knownTypes     answers
	visibleFolders answers
	now            func() time.Time
}

// NewService returns the document service.
func NewService(d Deps) *Service {
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Service{pool: d.Pool, store: d.Store, folders: d.Folders, schema: d.Schema, maxSize: d.MaxUploadBytes, log: log,
		pageCountMax: d.PageCountMaxBytes, pageCountTimeout: d.PageCountTimeout, now: time.Now,
		knownTypes:     answers{ttl: knownTypeTTL, max: maxAnswers},
		visibleFolders: answers{ttl: visibleFolderTTL, max: maxAnswers}}
	if s.pageCountMax <= 0 {
		s.pageCountMax = DefaultPageCountMaxBytes
	}
	if s.pageCountTimeout <= 0 {
		s.pageCountTimeout = time.Minute
	}
	n := d.PageCountConcurrency
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	s.pageCounts = make(chan struct{}, n)
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

// visibleSQL is the visibility predicate of document alias d: $1 is
// "unrestricted", $2 the caller's group ids. Every query touching a
// caller's documents uses it.
const visibleSQL = `($1::bool OR EXISTS (SELECT 1 FROM document_groups vg WHERE vg.doc_id = d.id AND vg.group_id = ANY($2::bigint[])))`

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
}

// lockDoc loads a visible document for update inside tx.
func lockDoc(ctx context.Context, tx pgx.Tx, p *auth.Principal, id int64) (docState, error) {
	st := docState{id: id}
	err := tx.QueryRow(ctx, `SELECT d.rev, d.locked_by FROM documents d
		WHERE d.id = $3 AND `+visibleSQL+` FOR UPDATE`, p.Unrestricted(), p.GroupIDs, id).Scan(&st.rev, &st.lockedBy)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, errDocNotFound()
	}
	return st, err
}

// checkVisible reports 404 unless the caller can see the document.
func checkVisible(ctx context.Context, q querier, p *auth.Principal, id int64) error {
	var ok bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM documents d WHERE d.id = $3 AND `+visibleSQL+`)`,
		p.Unrestricted(), p.GroupIDs, id).Scan(&ok); err != nil {
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
)

// inTx runs fn in a transaction, passing *apierr.Error values through and
// wrapping anything else as an internal error.
func (s *Service) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, s.pool, fn)
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
