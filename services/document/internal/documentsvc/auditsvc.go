package documentsvc

import (
	"context"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
	auditv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/audit/v1"
	"github.com/docrepo/docrepo/pkg/visibility"
)

// AuditPartLister is another owner's part of the audit feed (the folder
// service's AuditPartService).
type AuditPartLister interface {
	ListAuditPart(ctx context.Context, in *auditv1.ListAuditPartRequest, opts ...grpc.CallOption) (*auditv1.ListAuditPartResponse, error)
}

// IdentityAudit is the identity schema's part of the feed (pkg/identity,
// which every service reads).
type IdentityAudit interface {
	AuditEntries(ctx context.Context, f audit.Filter, after audit.Position, limit int) ([]audit.Record, error)
}

// AuditServer serves AuditService: a document's history from this
// service's own log, and the feed merged from the owners' logs — this
// service's, the identity schema's and, over gRPC as the caller, the
// folder service's (docs/design.md §9).
type AuditServer struct {
	auditv1.UnimplementedAuditServiceServer
	s        *Service
	folders  AuditPartLister
	identity IdentityAudit
}

// NewAuditServer returns the AuditService of s.
func NewAuditServer(s *Service, folders AuditPartLister, identity IdentityAudit) *AuditServer {
	return &AuditServer{s: s, folders: folders, identity: identity}
}

// Sources of the merged feed, by the schema that holds them.
const (
	sourceDocument = Schema
	sourceFolder   = "folder"
	sourceIdentity = "identity"
)

// GetDocumentHistory lists the entries of a document the caller can see,
// live or in the trash, oldest first. A purged document's entries are
// read through the feed (ListAudit with object_type document), by
// administrators only: the purge erased the document for its users.
func (a *AuditServer) GetDocumentHistory(ctx context.Context, req *auditv1.GetDocumentHistoryRequest) (*auditv1.GetDocumentHistoryResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkDocID(req.GetDocId()); err != nil {
		return nil, err
	}
	after, err := audit.ParseHistoryCursor(req.GetCursor())
	if err != nil {
		return nil, err
	}
	limit, err := audit.ParseLimit(req.Limit)
	if err != nil {
		return nil, err
	}
	if err := checkHistoryVisible(ctx, a.s.pool, p, req.GetDocId()); err != nil {
		return nil, err
	}
	recs, err := audit.In(Schema).History(ctx, a.s.pool, "document", req.GetDocId(), after, limit)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	resp := &auditv1.GetDocumentHistoryResponse{NextCursor: req.GetCursor()}
	for _, r := range recs {
		resp.Entries = append(resp.Entries, audit.ToProto(r))
		resp.NextCursor = strconv.FormatInt(r.ID, 10)
	}
	return resp, nil
}

// ListAudit is one page of the merged feed: each owner's next entries
// after the cursor's position in its log, interleaved by time.
func (a *AuditServer) ListAudit(ctx context.Context, req *auditv1.ListAuditRequest) (*auditv1.ListAuditResponse, error) {
	f, err := audit.ParseFilter(req.GetUser(), req.GetAction(), req.GetSince(), req.GetUntil())
	if err != nil {
		return nil, err
	}
	f.ObjectType, f.ObjectID = strings.TrimSpace(req.GetObjectType()), req.GetObjectId()
	if err := f.Check(); err != nil {
		return nil, err
	}
	limit, err := audit.ParseLimit(req.Limit)
	if err != nil {
		return nil, err
	}
	cur, err := audit.ParseCursor(req.GetCursor())
	if err != nil {
		return nil, err
	}
	for src := range cur {
		if src != sourceDocument && src != sourceFolder && src != sourceIdentity {
			return nil, apierr.Invalid("Invalid value for cursor: not a cursor this API returned")
		}
	}
	var docs, folders, ids []audit.Record
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		docs, err = audit.In(Schema).List(gctx, a.s.pool, f, cur[sourceDocument], limit)
		return err
	})
	g.Go(func() error {
		resp, err := a.folders.ListAuditPart(gctx, audit.PartRequest(f, cur[sourceFolder], limit))
		if err != nil {
			return downstream(err, "folder service", apierr.Internal(err))
		}
		folders = audit.FromPart(sourceFolder, resp)
		return nil
	})
	g.Go(func() (err error) {
		ids, err = a.identity.AuditEntries(gctx, f, cur[sourceIdentity], limit)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, internal(err)
	}
	entries, next := audit.Merge(map[string][]audit.Record{sourceDocument: docs, sourceFolder: folders, sourceIdentity: ids}, cur, limit)
	resp := &auditv1.ListAuditResponse{NextCursor: next.String()}
	for _, r := range entries {
		resp.Entries = append(resp.Entries, audit.ToProto(r))
	}
	return resp, nil
}

// checkHistoryVisible is 404 unless document id exists — live, in the
// trash or being purged — and shares a group with the caller: whoever
// may see a document in the trash may read how it got there.
func checkHistoryVisible(ctx context.Context, q querier, p *auth.Principal, id int64) error {
	var ok bool
	vis := visibility.Of(p)
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM documents d WHERE d.id = $3 AND `+vis.SQL(documentGroups, "d", 1)+`)`,
		vis.Unrestricted, vis.GroupIDs, id).Scan(&ok); err != nil {
		return apierr.Internal(err)
	}
	if !ok {
		return errDocNotFound()
	}
	return nil
}
