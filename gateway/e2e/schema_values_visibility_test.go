package e2e

import (
	"slices"
	"strconv"
	"testing"
)

// TestFolderValuesHideInvisibleFolders: the distinct values of
// Documents.filesbelongto are folder ids; a visible document may sit in a
// folder the caller cannot see, and that folder's id must not be listed
// (include=folders leaves it out too).
func TestFolderValuesHideInvisibleFolders(t *testing.T) {
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

// TestSearchShowsOnlyVisibleFolders: search's filesbelongto is about the
// caller's visible folders too: a visible document in a folder the caller
// cannot see shows no folder id, and filtering on that id finds nothing,
// as for a folder that does not exist; the uploader, who sees the folder,
// gets both.
func TestSearchShowsOnlyVisibleFolders(t *testing.T) {
	t.Parallel()
	g1, g2 := uniq("g"), uniq("g")
	owner := newUser(t, []string{g1})
	private := owner.createFolder(uniq("Private"), 0) // g1 only
	both := &docUser{client: newUser(t, []string{g1, g2}), group: g1, folder: private}
	doc := both.uploadFile("in-private.txt", uniqText(t, 50)) // groups g1, g2
	reader := newUser(t, []string{g2})                        // sees doc, not private
	reader.waitIndexed(doc.DocID)
	byID := map[string]any{"eq": map[string]any{"field": "id", "value": doc.DocID}}
	inFolder := map[string]any{"eq": map[string]any{"field": "filesbelongto", "value": private.FolderID}}
	for _, c := range []struct {
		name    string
		who     *client
		folders int
		found   int64
	}{{"a caller who sees the folder", both.client, 1, 1}, {"a caller who does not", reader, 0, 0}} {
		t.Run(c.name, func(t *testing.T) {
			r := c.who.searchOK(map[string]any{"where": byID, "select": []any{"id", "filesbelongto"}})
			if len(r.Results) != 1 {
				t.Fatalf("results = %+v", r.Results)
			}
			if got := r.Results[0]["filesbelongto"].([]any); len(got) != c.folders {
				t.Fatalf("filesbelongto = %v, want %d folder(s)", got, c.folders)
			}
			if r := c.who.searchOK(map[string]any{"where": inFolder}); r.Total != c.found {
				t.Fatalf("filter on the folder: total %d, want %d", r.Total, c.found)
			}
		})
	}
}
