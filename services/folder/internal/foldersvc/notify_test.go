package foldersvc

import (
	"context"
	"errors"
	"slices"
	"testing"

	"google.golang.org/grpc"

	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// documents stands in for the document service: it counts nothing, and
// records each FoldersDeleted call with whether the folders were already
// gone from the folder service's tables when it came.
type documents struct {
	s     *Service
	fail  error
	calls []notified
}

type notified struct {
	ids       []int64
	remaining int // of ids, still in the folders table at the call
	deadline  bool
}

func (d *documents) CountFolderDocuments(context.Context, *documentv1.CountFolderDocumentsRequest, ...grpc.CallOption) (*documentv1.CountFolderDocumentsResponse, error) {
	return &documentv1.CountFolderDocumentsResponse{}, nil
}

func (d *documents) FoldersDeleted(ctx context.Context, in *documentv1.FoldersDeletedRequest, _ ...grpc.CallOption) (*documentv1.FoldersDeletedResponse, error) {
	n := notified{ids: in.GetFolderIds()}
	_, n.deadline = ctx.Deadline()
	// Another connection: the deletion's transaction must have committed.
	if err := d.s.pool.QueryRow(ctx, `SELECT count(*) FROM folders WHERE id = ANY($1)`, n.ids).Scan(&n.remaining); err != nil {
		return nil, err
	}
	d.calls = append(d.calls, n)
	return &documentv1.FoldersDeletedResponse{}, d.fail
}

// A deletion tells the document service which folders went, after its
// transaction committed and before it answers, within a deadline; when
// the call fails the deletion still answers (the folder.deleted event is
// the durable path). A refused deletion tells nothing.
func TestDeleteFolderTellsTheDocumentService(t *testing.T) {
	docs := &documents{}
	s := NewService(pgtest.NewPool(t, Schema, Migrations()...), docs)
	docs.s = s.NotifyDeletions(docs, nil)
	alice := asUser(1)
	a := create(t, s, alice, "a", 0)
	b := create(t, s, alice, "b", a.GetFolderId())
	c := create(t, s, alice, "c", b.GetFolderId())
	other := create(t, s, alice, "other", 0)
	hidden := create(t, s, asUser(2), "hidden", 0)

	tests := []struct {
		name      string
		folder    int64
		fail      error
		wantErr   bool
		wantCalls [][]int64
	}{
		{name: "an invisible folder is refused, nothing told", folder: hidden.GetFolderId(), wantErr: true},
		{name: "a subtree", folder: b.GetFolderId(), wantCalls: [][]int64{{b.GetFolderId(), c.GetFolderId()}}},
		{name: "the call fails, the deletion stands", folder: other.GetFolderId(), fail: errors.New("document service away"),
			wantCalls: [][]int64{{other.GetFolderId()}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs.calls, docs.fail = nil, tt.fail
			resp, err := s.DeleteFolder(alice, &folderv1.DeleteFolderRequest{FolderId: tt.folder})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if len(docs.calls) != len(tt.wantCalls) {
				t.Fatalf("%d FoldersDeleted calls %+v, want %d", len(docs.calls), docs.calls, len(tt.wantCalls))
			}
			for i, call := range docs.calls {
				if !slices.Equal(call.ids, tt.wantCalls[i]) || call.remaining != 0 || !call.deadline {
					t.Errorf("call %+v, want ids %v after the commit (0 remaining), with a deadline", call, tt.wantCalls[i])
				}
			}
			if err == nil && !slices.Equal(resp.GetDeletedFolderIds(), tt.wantCalls[0]) {
				t.Errorf("deleted %v, want %v", resp.GetDeletedFolderIds(), tt.wantCalls[0])
			}
		})
	}
}
