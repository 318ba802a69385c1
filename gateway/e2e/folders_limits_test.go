package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestFolderPathOverTheLimitIs422: a folder whose full_path would be longer than
// the folder service accepts is refused with 422 on create and on move (a
// move checks the deepest descendant), never a 500 from the database. A path
// of exactly the maximum is fine.
func TestFolderPathOverTheLimitIs422(t *testing.T) {
	t.Parallel()
	u := newUser(t, []string{uniq("g")})
	const max = 1200 // bytes of UTF-8, foldersvc.MaxPathBytes
	long := func(n int) string { return strings.Repeat("日", n/3) + strings.Repeat("x", n%3) }

	// Five levels of 240 bytes plus four separators of 2 bytes: 1208 bytes.
	var parent int64
	var chain []folder
	for range 4 {
		f := u.createFolder(long(240), parent)
		chain = append(chain, f)
		parent = f.FolderID
	}
	// 4*240 + 3*2 = 966 bytes so far; room for 1200-966-2 = 232 bytes.
	r := u.do("POST", "/apiv2/pub/folders", map[string]any{"name": long(233), "parent_id": parent})
	expect(t, r, 422, fmt.Sprintf("Folder path too long: at most %d bytes", max))
	exact := u.createFolder(long(232), parent)
	if len(exact.FullPath) != max {
		t.Fatalf("full_path is %d bytes, want %d", len(exact.FullPath), max)
	}
	// Many levels of multi-byte names never reach the database's limits.
	deep := int64(0)
	for i := 0; ; i++ {
		r := u.do("POST", "/apiv2/pub/folders", map[string]any{"name": strings.Repeat("😀", 255), "parent_id": deep})
		if r.Status == 422 {
			expect(t, r, 422, fmt.Sprintf("Folder path too long: at most %d bytes", max))
			break
		}
		expect(t, r, 200)
		var f folder
		r.JSON(t, &f)
		deep = f.FolderID
		if i > 10 {
			t.Fatal("no limit on the path length")
		}
	}

	// Moving a subtree where its deepest folder would get too long a path.
	other := u.createFolder(long(239)+"y", 0)
	r = u.do("POST", fmt.Sprintf("/apiv2/pub/folders/%d/move", chain[1].FolderID), map[string]any{"new_parent_id": other.FolderID})
	// chain[1]'s subtree ends in exact (1200 bytes); under other (240 bytes)
	// instead of chain[0] (240 bytes) it would stay at 1200: allowed.
	expect(t, r, 200)
	longer := u.createFolder(long(250), 0)
	r = u.do("POST", fmt.Sprintf("/apiv2/pub/folders/%d/move", chain[1].FolderID), map[string]any{"new_parent_id": longer.FolderID})
	expect(t, r, 422, fmt.Sprintf("Folder path too long: at most %d bytes", max))
	// Nothing moved.
	var path string
	if err := stk.pool.QueryRow(context.Background(), `SELECT full_path FROM folder.folders WHERE id = $1`, exact.FolderID).Scan(&path); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(path, other.Name+"->") || len(path) != max {
		t.Fatalf("full_path after the refused move = %q", path)
	}
}

// TestFolderCreateWithoutGroupsIsRefused: a folder gets the creator's groups;
// a user in no group would create a folder nobody can see, list, use or
// delete, so it is refused (as an upload is) and nothing is created.
func TestFolderCreateWithoutGroupsIsRefused(t *testing.T) {
	t.Parallel()
	lonely := newUser(t, nil)
	name := uniq("Orphan")
	expect(t, lonely.do("POST", "/apiv2/pub/folders", map[string]any{"name": name}), 403,
		"You belong to no group, so nobody could see the folder")
	var n int
	if err := stk.pool.QueryRow(context.Background(), `SELECT count(*) FROM folder.folders WHERE name = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d folders created", n)
	}
}
