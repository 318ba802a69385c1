package indexing

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	indexerv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/indexer/v1"
)

// GetOcrStatus implements IndexerService.GetOcrStatus.
func (s *Server) GetOcrStatus(context.Context, *indexerv1.GetOcrStatusRequest) (*indexerv1.GetOcrStatusResponse, error) {
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
		DocumentsQueued:     int32(st.DocumentsQueued),
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
	return out, nil
}
