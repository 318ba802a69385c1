package e2e

import (
	"fmt"
	"testing"
)

// TestFolderDeleteCountsOnlyVisibleDocuments: deleting a folder reports
// how many documents lost an assignment, but only those the caller can
// see: a document of another group in the same folder must not show up in
// the count (that would reveal it exists).
func TestFolderDeleteCountsOnlyVisibleDocuments(t *testing.T) {
	t.Parallel()
	g1, g2 := uniq("g"), uniq("g")
	creator := newUser(t, []string{g1, g2})
	shared := creator.createFolder(uniq("Shared"), 0) // groups g1 and g2
	deleter := &docUser{client: newUser(t, []string{g1}), group: g1, folder: shared}
	stranger := &docUser{client: newUser(t, []string{g2}), group: g2, folder: shared}
	mine := deleter.uploadFile("mine.txt", uniqText(t, 50))
	hidden := stranger.uploadFile("hidden.txt", uniqText(t, 50))
	expect(t, deleter.do("GET", fmt.Sprintf("/apiv2/pub/documents/%d", hidden.DocID), nil), 404, "Document not found")

	r := deleter.do("DELETE", fmt.Sprintf("/apiv2/pub/folders/%d", shared.FolderID), nil)
	expect(t, r, 200)
	var del struct {
		UnassignedDocuments int `json:"unassigned_documents"`
	}
	r.JSON(t, &del)
	if del.UnassignedDocuments != 1 {
		t.Fatalf("unassigned_documents = %d, want 1 (only the caller's visible document): %s", del.UnassignedDocuments, r.Body)
	}
	// Both documents lost the assignment all the same.
	for _, c := range []struct {
		u  *docUser
		id int64
	}{{deleter, mine.DocID}, {stranger, hidden.DocID}} {
		if d := c.u.getDoc(c.id, "folders"); len(d.Folders) != 0 {
			t.Fatalf("document %d still in %+v", c.id, d.Folders)
		}
	}
}
