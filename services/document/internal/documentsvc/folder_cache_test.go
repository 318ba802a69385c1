package documentsvc

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
)

// countingFolders answers GetFolders as the folder service does for the
// caller in the context: a folder is returned when it shares a group with
// the caller. It counts calls.
type countingFolders struct {
	groups map[int64][]int64 // folder → its groups
	calls  int
}

func (c *countingFolders) GetFolders(ctx context.Context, in *folderv1.GetFoldersRequest, _ ...grpc.CallOption) (*folderv1.GetFoldersResponse, error) {
	c.calls++
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	out := &folderv1.GetFoldersResponse{}
	for _, id := range in.GetFolderIds() {
		for _, g := range c.groups[id] {
			if p.Unrestricted() || slices.Contains(p.GroupIDs, g) {
				out.Folders = append(out.Folders, &folderv1.Folder{FolderId: id})
				break
			}
		}
	}
	return out, nil
}

// TestVisibleFoldersSkipTheFolderService: a folder the folder service
// showed to a caller's groups is taken as visible to exactly those groups
// for a while, so uploads into the same folder cost no round trip; another
// set of groups (another user, or the same user after a change of groups)
// asks again and is refused when the folder is not theirs; a refusal is
// never remembered.
func TestVisibleFoldersSkipTheFolderService(t *testing.T) {
	folders := &countingFolders{groups: map[int64][]int64{7: {1}, 8: {2}}}
	s := NewService(Deps{Folders: folders})
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	alice := &auth.Principal{UserID: 1, GroupIDs: []int64{3, 1}, Scopes: []string{auth.ScopeDocumentsWrite}}
	aliceSorted := &auth.Principal{UserID: 1, GroupIDs: []int64{1, 3}, Scopes: []string{auth.ScopeDocumentsWrite}}
	bob := &auth.Principal{UserID: 2, GroupIDs: []int64{2}, Scopes: []string{auth.ScopeDocumentsWrite}}
	aliceMoved := &auth.Principal{UserID: 1, GroupIDs: []int64{3}, Scopes: []string{auth.ScopeDocumentsWrite}}

	tests := []struct {
		name      string
		caller    *auth.Principal
		folder    int64
		advance   time.Duration
		wantErr   bool
		wantCalls int
	}{
		{name: "first upload asks", caller: alice, folder: 7, wantCalls: 1},
		{name: "the same groups are answered from memory", caller: aliceSorted, folder: 7, wantCalls: 1},
		{name: "another user's groups ask, and are refused", caller: bob, folder: 7, wantErr: true, wantCalls: 2},
		{name: "a refusal is asked again", caller: bob, folder: 7, wantErr: true, wantCalls: 3},
		{name: "a caller who left the folder's group asks, and is refused", caller: aliceMoved, folder: 7, wantErr: true, wantCalls: 4},
		{name: "another folder asks", caller: alice, folder: 8, wantErr: true, wantCalls: 5},
		{name: "after the TTL the folder is asked again", caller: alice, folder: 7, advance: visibleFolderTTL, wantCalls: 6},
	}
	for _, tt := range tests {
		now = now.Add(tt.advance)
		ctx := auth.WithPrincipal(context.Background(), tt.caller)
		err := s.checkFolder(ctx, tt.caller, tt.folder)
		if tt.wantErr != (err != nil) || (err != nil && !apierr.IsKind(err, apierr.KindNotFound)) {
			t.Fatalf("%s: err = %v, want error %v (404)", tt.name, err, tt.wantErr)
		}
		if folders.calls != tt.wantCalls {
			t.Fatalf("%s: %d folder service calls, want %d", tt.name, folders.calls, tt.wantCalls)
		}
	}
}
