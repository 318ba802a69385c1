package e2e

import (
	"fmt"
	"testing"

	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
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

// TestCountFolderDocumentsSeesOnlyVisibleFolders: CountFolderDocuments,
// called directly over gRPC, counts the caller's documents only in the
// folders the caller can see. A document the caller sees may sit in a
// folder they cannot see; counting it would reveal the assignment (and that
// the folder exists) which GET's folders hides.
func TestCountFolderDocumentsSeesOnlyVisibleFolders(t *testing.T) {
	t.Parallel()
	g1, g2 := uniq("g"), uniq("g")
	caller := newUser(t, []string{g1})
	hiddenOwner := newUser(t, []string{g2})
	hidden := hiddenOwner.createFolder(uniq("Hidden"), 0) // g2 only
	visible := caller.createFolder(uniq("Visible"), 0)    // g1 only
	both := &docUser{client: newUser(t, []string{g1, g2}), group: g1, folder: hidden}
	inHidden := both.uploadFile("in-hidden.txt", uniqText(t, 50)) // groups g1, g2: the caller sees it
	if d := caller.getDoc(inHidden.DocID, "folders"); len(d.Folders) != 0 {
		t.Fatalf("the caller sees the hidden folder in %+v", d.Folders)
	}
	(&docUser{client: caller, group: g1, folder: visible}).uploadFile("in-visible.txt", uniqText(t, 50))

	docs, ctx := documentClient(t, caller)
	for _, c := range []struct {
		name    string
		folders []int64
		want    int32
	}{
		{name: "hidden folder", folders: []int64{hidden.FolderID}, want: 0},
		{name: "visible folder", folders: []int64{visible.FolderID}, want: 1},
		{name: "both", folders: []int64{hidden.FolderID, visible.FolderID}, want: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := docs.CountFolderDocuments(ctx, &documentv1.CountFolderDocumentsRequest{FolderIds: c.folders})
			if err != nil {
				t.Fatal(err)
			}
			if got.GetCount() != c.want {
				t.Fatalf("count = %d, want %d", got.GetCount(), c.want)
			}
		})
	}
}
