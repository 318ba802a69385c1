package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/docrepo/docrepo/pkg/testenv"
)

// TestSearchRealDocuments uploads every real-world document of
// shared/data/documents (PDF and DOCX files nobody wrote for this project),
// waits until the indexer has extracted and indexed them, and expects a
// phrase search for each phrase MANIFEST.tsv lists to find its document.
func TestSearchRealDocuments(t *testing.T) {
	t.Parallel()
	dir, docs := testenv.RealDocuments(t)
	u := newDocUser(t)
	ids := map[string]int64{}
	var all []int64
	for _, e := range docs {
		content, err := os.ReadFile(filepath.Join(dir, e.File))
		if err != nil {
			t.Fatal(err)
		}
		res := u.uploadFile(e.File, content)
		ids[e.File] = res.DocID
		all = append(all, res.DocID)
	}
	// Every document is indexed, blank-scan.pdf (no text layer) included.
	u.waitIndexed(all...)
	phrases := 0
	for _, e := range docs {
		for _, p := range e.Phrases {
			phrases++
			t.Run(e.File+"/"+p, func(t *testing.T) {
				res := u.searchOK(map[string]any{"where": fts(strconv.Quote(p)), "limit": 50})
				for _, id := range res.IDs() {
					if id == ids[e.File] {
						return
					}
				}
				t.Errorf("phrase %q of %s (doc %d) not found; results %v", p, e.File, ids[e.File], res.IDs())
			})
		}
	}
	if phrases == 0 {
		t.Fatal("MANIFEST.tsv lists no phrases")
	}
}

// TestSearchFollowsChanges: the index follows metadata updates, new file
// versions and folder deletions, through their events.
func TestSearchFollowsChanges(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	sub := u.createFolder(uniq("Sub"), 0)
	inSub := u.uploadText("sub.txt", "a walrus lives here", field("folder_id", strconv.FormatInt(sub.FolderID, 10)))
	id := u.uploadText("walrus.txt", "the original walrus content")
	u.waitIndexed(id, inSub)

	r := u.do("PATCH", fmt.Sprintf("/apiv3/pub/documents/%d", id), map[string]any{"description": "Renamed walrus memo"})
	expect(t, r, 200)
	u.waitSearch("the new description", map[string]any{"where": clause("eq", "description", "Renamed walrus memo")}, func(res searchResult) error {
		if res.Total != 1 || res.IDs()[0] != id {
			return fmt.Errorf("found %v", res.IDs())
		}
		return nil
	})

	r = u.do("POST", fmt.Sprintf("/apiv3/pub/documents/%d/versions", id), multipartParts(t, formPart{name: "file", filename: "v2.txt", contentType: "text/plain", content: []byte("replacement narwhal content")}))
	expect(t, r, 200)
	u.waitSearch("the new version's content", map[string]any{"where": fts("narwhal")}, func(res searchResult) error {
		if res.Total != 1 || res.IDs()[0] != id {
			return fmt.Errorf("found %v", res.IDs())
		}
		return nil
	})
	if res := u.searchOK(map[string]any{"where": fts(`"original walrus"`)}); res.Total != 0 {
		t.Errorf("the replaced file's text is still found: %v", res.IDs())
	}

	inFolder := map[string]any{"where": clause("eq", "filesbelongto", sub.FolderID)}
	if res := u.searchOK(inFolder); res.Total != 1 {
		t.Fatalf("documents in the subfolder: %v", res.IDs())
	}
	expect(t, u.do("DELETE", fmt.Sprintf("/apiv2/pub/folders/%d", sub.FolderID), nil), 200)
	u.waitSearch("the folder deletion", inFolder, func(res searchResult) error {
		if res.Total != 0 {
			return fmt.Errorf("still in the deleted folder: %v", res.IDs())
		}
		return nil
	})
	// The document itself stays searchable.
	if res := u.searchOK(map[string]any{"where": fts("walrus lives")}); res.Total != 1 {
		t.Errorf("document of the deleted folder: %v", res.IDs())
	}
}
