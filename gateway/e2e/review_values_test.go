package e2e

import (
	"slices"
	"strconv"
	"testing"
)

// TestReviewFolderValuesHideInvisibleFolders: the distinct values of
// Documents.filesbelongto are folder ids; a visible document may sit in a
// folder the caller cannot see, and that folder's id must not be listed
// (include=folders leaves it out too).
func TestReviewFolderValuesHideInvisibleFolders(t *testing.T) {
	t.Parallel()
	g1, g2 := uniq("g"), uniq("g")
	owner := newUser(t, []string{g1})
	private := owner.createFolder(uniq("Private"), 0) // g1 only
	both := &docUser{client: newUser(t, []string{g1, g2}), group: g1, folder: private}
	doc := both.uploadFile("in-private.txt", uniqText(t, 50)) // groups g1, g2
	reader := newUser(t, []string{g2})                        // sees doc, not private
	if d := reader.getDoc(doc.DocID, "folders"); len(d.Folders) != 0 {
		t.Fatalf("include=folders shows %+v", d.Folders)
	}
	values := func(c *client, search string) []string {
		r := c.do("GET", "/apiv2/pub/schema/values/Documents.filesbelongto?limit=500&search="+search, nil)
		expect(t, r, 200)
		var v []string
		r.JSON(t, &v)
		return v
	}
	id := strconv.FormatInt(private.FolderID, 10)
	if v := values(both.client, id); !slices.Contains(v, id) {
		t.Fatalf("a caller who sees the folder: values %v lack %s", v, id)
	}
	if v := values(reader, ""); slices.Contains(v, id) {
		t.Fatalf("values %v reveal invisible folder %s", v, id)
	}
	if v := values(reader, id); slices.Contains(v, id) {
		t.Fatalf("values %v reveal invisible folder %s", v, id)
	}
}
