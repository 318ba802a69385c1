package indexing

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	indexerv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/indexer/v1"
)

// GetOcrStatus implements IndexerService.GetOcrStatus: the OCR engine's
// work in this process and the job queue of its engine.
func (s *Server) GetOcrStatus(ctx context.Context, _ *indexerv1.GetOcrStatusRequest) (*indexerv1.GetOcrStatusResponse, error) {
	e := s.ix.o.OCR
	if e == nil {
		return &indexerv1.GetOcrStatusResponse{}, nil
	}
	st := e.Status()
	out := &indexerv1.GetOcrStatusResponse{
		Enabled:             true,
		Langs:               st.Langs,
		InstalledLangs:      e.Installed(),
		Workers:             int32(st.Workers),
		DocumentsInProgress: int32(st.DocumentsInProgress),
		PagesQueued:         int32(st.PagesQueued),
		PagesInProgress:     int32(st.PagesInProgress),
		PagesDone:           st.PagesDone,
		PagesFailed:         st.PagesFailed,
	}
	for _, d := range st.Documents {
		out.Documents = append(out.Documents, &indexerv1.OcrDocument{
			DocId: d.DocID, Pages: int32(d.Pages), PagesDone: int32(d.Done), Started: timestamppb.New(d.Started),
		})
	}
	if q := s.ix.o.OCRQueue; q != nil {
		qs, err := q.Status(ctx)
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "the OCR job queue does not answer: %v", err)
		}
		out.DocumentsQueued = int32(qs.Queued)
		for _, o := range qs.Owners {
			out.Queue = append(out.Queue, &indexerv1.OcrQueueOwner{Owner: o.Owner, Queued: int32(o.Queued), Running: int32(o.Running),
				PagesQueued: int32(o.PagesQueued), Oldest: timestamppb.New(o.OldestQueuedFrom)})
		}
	}
	return out, nil
}
