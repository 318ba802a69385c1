package audit

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/docrepo/docrepo/pkg/apierr"
	auditv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/audit/v1"
)

// DefaultLimit is the page size of the audit listings when none is asked.
const DefaultLimit = 100

// ToProto is r as the API shows it.
func ToProto(r Record) *auditv1.AuditEntry {
	e := &auditv1.AuditEntry{
		Id: r.ID, Source: r.Source, OccurredAt: timestamppb.New(r.OccurredAt), Action: r.Action,
		ObjectType: r.ObjectType, ObjectId: r.ObjectID, RequestId: r.RequestID,
		Actor: &auditv1.Actor{UserId: r.Actor.UserID, Username: r.Actor.Username, KeyId: r.Actor.KeyID, Service: r.Actor.Service},
	}
	var m map[string]any
	if json.Unmarshal(r.Details, &m) == nil {
		if st, err := structpb.NewStruct(m); err == nil {
			e.Details = st
		}
	}
	if e.Details == nil {
		e.Details = &structpb.Struct{}
	}
	return e
}

// FromPart is the records of an owner's answer to ListAuditPart.
func FromPart(source string, resp *auditv1.ListAuditPartResponse) []Record {
	out := make([]Record, 0, len(resp.GetEntries()))
	for _, pe := range resp.GetEntries() {
		e := pe.GetEntry()
		a := e.GetActor()
		details, _ := json.Marshal(e.GetDetails().AsMap())
		out = append(out, Record{
			Source: source, ID: e.GetId(), TxID: pe.GetTxid(), OccurredAt: e.GetOccurredAt().AsTime(),
			Action: e.GetAction(), ObjectType: e.GetObjectType(), ObjectID: e.GetObjectId(), RequestID: e.GetRequestId(),
			Actor:   Actor{UserID: a.GetUserId(), Username: a.GetUsername(), KeyID: a.GetKeyId(), Service: a.GetService()},
			Details: details,
		})
	}
	return out
}

// PartRequest is the ListAuditPart request for f after position p.
func PartRequest(f Filter, p Position, limit int) *auditv1.ListAuditPartRequest {
	req := &auditv1.ListAuditPartRequest{User: f.User, Action: f.Actions, AfterTxid: p.TxID, AfterId: p.ID, Limit: int32(limit),
		ObjectType: f.ObjectType, ObjectId: f.ObjectID}
	if !f.Since.IsZero() {
		req.Since = timestamppb.New(f.Since)
	}
	if !f.Until.IsZero() {
		req.Until = timestamppb.New(f.Until)
	}
	return req
}

// PartServer answers ListAuditPart from one owner's log.
type PartServer struct {
	auditv1.UnimplementedAuditPartServiceServer
	Log  Log
	Pool Querier
}

// ListAuditPart lists the owner's entries after the request's position.
func (s *PartServer) ListAuditPart(ctx context.Context, req *auditv1.ListAuditPartRequest) (*auditv1.ListAuditPartResponse, error) {
	f := Filter{User: req.GetUser(), Actions: req.GetAction(), ObjectType: req.GetObjectType(), ObjectID: req.GetObjectId()}
	if req.Since != nil {
		f.Since = req.GetSince().AsTime()
	}
	if req.Until != nil {
		f.Until = req.GetUntil().AsTime()
	}
	if err := f.Check(); err != nil {
		return nil, err
	}
	recs, err := s.Log.List(ctx, s.Pool, f, Position{TxID: req.GetAfterTxid(), ID: req.GetAfterId()}, int(req.GetLimit()))
	if err != nil {
		return nil, apierr.Internal(err)
	}
	resp := &auditv1.ListAuditPartResponse{}
	for _, r := range recs {
		resp.Entries = append(resp.Entries, &auditv1.PartEntry{Entry: ToProto(r), Txid: r.TxID})
	}
	return resp, nil
}

// ParseFilter validates the feed's query: the user, actions and an RFC 3339
// time range.
func ParseFilter(user string, actions []string, since, until string) (Filter, error) {
	f := Filter{User: strings.TrimSpace(user), Actions: actions}
	for _, t := range []struct {
		name, in string
		out      *time.Time
	}{{"since", since, &f.Since}, {"until", until, &f.Until}} {
		if t.in == "" {
			continue
		}
		v, err := time.Parse(time.RFC3339Nano, t.in)
		if err != nil {
			return f, apierr.Invalid("Invalid value for %s: %q is not an RFC 3339 time (e.g. 2026-11-26T09:00:00Z)", t.name, t.in)
		}
		*t.out = v
	}
	return f, f.Check()
}

// ParseLimit is a page size: 1..MaxLimit, DefaultLimit when unset.
func ParseLimit(limit *int32) (int, error) {
	if limit == nil {
		return DefaultLimit, nil
	}
	if *limit < 1 || *limit > MaxLimit {
		return 0, apierr.Invalid("Invalid value for limit: must be 1..%d", MaxLimit)
	}
	return int(*limit), nil
}

// ParseHistoryCursor decodes a history cursor: the last entry's id.
func ParseHistoryCursor(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 0 {
		return 0, apierr.Invalid("Invalid value for cursor: not a cursor this API returned")
	}
	return id, nil
}
