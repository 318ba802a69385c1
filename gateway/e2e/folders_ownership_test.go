package e2e

import (
	"fmt"
	"testing"
)

// A subtree holding a folder the caller cannot see is neither moved nor
// deleted, and the refusal does not say how many such folders there are.
func TestFolderSubtreeWithHiddenFoldersIsNotMovedOrDeleted(t *testing.T) {
	t.Parallel()
	g, h := uniq("g"), uniq("g")
	u := newUser(t, []string{g})
	both := newUser(t, []string{g, h})
	parent := u.createFolder("Parent", 0)
	target := u.createFolder("Target", 0)
	// A child u can see, and below it one only group h can see.
	child := both.createFolder("Child", parent.FolderID)
	hidden2 := both.createFolder("Hidden2", child.FolderID)
	if _, err := stk.pool.Exec(t.Context(), `DELETE FROM folder.folder_groups WHERE folder_id = $1
		AND group_id = (SELECT id FROM identity.groups WHERE name = $2)`, hidden2.FolderID, g); err != nil {
		t.Fatal(err)
	}
	const detail = "Folder subtree contains folders you cannot access"
	expect(t, u.do("POST", fmt.Sprintf("/apiv2/pub/folders/%d/move", parent.FolderID),
		map[string]any{"new_parent_id": target.FolderID}), 403, detail)
	expect(t, u.do("DELETE", fmt.Sprintf("/apiv2/pub/folders/%d", parent.FolderID), nil), 403, detail)
	// Nothing changed: the hidden folder's path is still under Parent.
	var path string
	if err := stk.pool.QueryRow(t.Context(), `SELECT full_path FROM folder.folders WHERE id = $1`, hidden2.FolderID).Scan(&path); err != nil {
		t.Fatal(err)
	}
	if path != "Parent->Child->Hidden2" {
		t.Fatalf("hidden folder's path = %q after refused move", path)
	}
	// The user who sees the whole subtree may move it.
	expect(t, both.do("POST", fmt.Sprintf("/apiv2/pub/folders/%d/move", parent.FolderID),
		map[string]any{"new_parent_id": target.FolderID}), 200)
}
