package foldersvc

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// asUser is a caller in the given groups with the user scopes.
func asUser(groups ...int64) context.Context {
	return auth.WithPrincipal(context.Background(), &auth.Principal{UserID: 1, Username: "u", GroupIDs: groups,
		Scopes: []string{auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite}})
}

func create(t *testing.T, s *Service, ctx context.Context, name string, parent int64) *folderv1.Folder {
	t.Helper()
	resp, err := s.CreateFolder(ctx, &folderv1.CreateFolderRequest{Name: proto.String(name), ParentId: proto.Int64(parent)})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return resp.GetFolder()
}

func code(err error) codes.Code { return apierr.ToStatus(err).Code() }

// TestMoveFolderRewritesTheSubtreeOrRefuses: a move rewrites the paths of
// the whole subtree, and refuses (changing nothing) a move into the
// folder's own subtree, a subtree holding a folder the caller cannot see,
// and a move that would make a path too long.
func TestMoveFolderRewritesTheSubtreeOrRefuses(t *testing.T) {
	s := NewService(pgtest.NewPool(t, Schema, Migrations()...), nil)
	alice, bob := asUser(1), asUser(1, 2)
	a := create(t, s, alice, "a", 0)
	b := create(t, s, alice, "b", a.FolderId)
	c := create(t, s, alice, "c", b.FolderId)
	target := create(t, s, alice, "target", 0)
	hiddenParent := create(t, s, alice, "hp", 0)
	create(t, s, asUser(2), "only-group-2", 0) // not alice's
	long := create(t, s, alice, "x", 0)

	move := func(ctx context.Context, id, to int64) (*folderv1.Folder, error) {
		resp, err := s.MoveFolder(ctx, &folderv1.MoveFolderRequest{FolderId: id, NewParentId: proto.Int64(to)})
		return resp.GetFolder(), err
	}
	tests := []struct {
		name     string
		ctx      context.Context
		id, to   int64
		wantCode codes.Code
	}{
		{name: "into itself", ctx: alice, id: a.FolderId, to: a.FolderId, wantCode: codes.InvalidArgument},
		{name: "into its grandchild", ctx: alice, id: a.FolderId, to: c.FolderId, wantCode: codes.InvalidArgument},
		{name: "unknown target", ctx: alice, id: a.FolderId, to: 999999, wantCode: codes.NotFound},
		{name: "invisible folder", ctx: asUser(3), id: a.FolderId, to: 0, wantCode: codes.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := move(tt.ctx, tt.id, tt.to); code(err) != tt.wantCode {
				t.Fatalf("err = %v, want %v", err, tt.wantCode)
			}
		})
	}

	// A subtree with a folder of group 2 inside: alice (group 1) may not
	// move it; bob (groups 1 and 2) may.
	inner := create(t, s, asUser(2), "inner", 0)
	if _, err := s.pool.Exec(context.Background(), `UPDATE folders SET parent_id = $1, full_path = 'hp->inner' WHERE id = $2`, hiddenParent.FolderId, inner.FolderId); err != nil {
		t.Fatal(err)
	}
	if _, err := move(alice, hiddenParent.FolderId, target.FolderId); code(err) != codes.PermissionDenied {
		t.Fatalf("alice moved a subtree with a folder she cannot see: err = %v", err)
	}
	if _, err := move(bob, hiddenParent.FolderId, target.FolderId); err != nil {
		t.Fatalf("bob, who sees the whole subtree: %v", err)
	}

	// Too long: a name just under the limit cannot go below a folder.
	if _, err := s.pool.Exec(context.Background(), `UPDATE folders SET name = $1, full_path = $1 WHERE id = $2`,
		strings.Repeat("n", MaxPathBytes-2), long.FolderId); err != nil {
		t.Fatal(err)
	}
	if _, err := move(alice, long.FolderId, a.FolderId); apierr.ToStatus(err).Message() != errPathTooLong().Error() {
		t.Fatalf("err = %v, want the path-too-long refusal", err)
	}

	// The real move: every path below a changes.
	moved, err := move(alice, a.FolderId, target.FolderId)
	if err != nil {
		t.Fatal(err)
	}
	if moved.GetFullPath() != "target->a" || moved.GetParentId() != target.FolderId {
		t.Fatalf("moved folder %+v", moved)
	}
	got, err := s.GetFolders(alice, &folderv1.GetFoldersRequest{FolderIds: []int64{b.FolderId, c.FolderId}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.GetFolders()) != 2 || got.GetFolders()[0].GetFullPath() != "target->a->b" || got.GetFolders()[1].GetFullPath() != "target->a->b->c" {
		t.Fatalf("descendants after the move: %v", got.GetFolders())
	}
}

// Creating and moving a folder each append one audit entry with the
// caller and what changed (a move's parent and path before and after); a
// refused move appends nothing. (Deletion needs the document service: the
// e2e suite's audit test covers it.)
func TestFolderChangesAreAudited(t *testing.T) {
	pool := pgtest.NewPool(t, Schema, Migrations()...)
	s := NewService(pool, nil)
	alice := asUser(1)
	a := create(t, s, alice, "a", 0)
	b := create(t, s, alice, "b", a.GetFolderId())
	c := create(t, s, alice, "c", 0)
	if _, err := s.MoveFolder(alice, &folderv1.MoveFolderRequest{FolderId: a.GetFolderId(), NewParentId: proto.Int64(b.GetFolderId())}); err == nil {
		t.Fatal("a folder moved into its own subtree")
	}
	if _, err := s.MoveFolder(alice, &folderv1.MoveFolderRequest{FolderId: b.GetFolderId(), NewParentId: proto.Int64(c.GetFolderId())}); err != nil {
		t.Fatal(err)
	}
	// History, not the feed: the feed waits for every older transaction
	// of the (shared) server to end.
	var recs []audit.Record
	for _, f := range []*folderv1.Folder{a, b, c} {
		h, err := audit.In(Schema).History(context.Background(), pool, "folder", f.GetFolderId(), 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, h...)
	}
	slices.SortFunc(recs, func(x, y audit.Record) int { return cmp.Compare(x.ID, y.ID) })
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s %d %s %s", r.Action, r.ObjectID, r.Actor.Username, r.Details))
	}
	want := []string{
		fmt.Sprintf(`folder.created %d u {"name": "a", "full_path": "a", "group_ids": [1], "parent_id": 0}`, a.GetFolderId()),
		fmt.Sprintf(`folder.created %d u {"name": "b", "full_path": "a->b", "group_ids": [1], "parent_id": %d}`, b.GetFolderId(), a.GetFolderId()),
		fmt.Sprintf(`folder.created %d u {"name": "c", "full_path": "c", "group_ids": [1], "parent_id": 0}`, c.GetFolderId()),
		fmt.Sprintf(`folder.moved %d u {"after": {"full_path": "c->b", "parent_id": %d}, "before": {"full_path": "a->b", "parent_id": %d}, "moved_folder_ids": [%d]}`,
			b.GetFolderId(), c.GetFolderId(), a.GetFolderId(), b.GetFolderId()),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
