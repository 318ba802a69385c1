package e2e

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// uploadWithKey uploads content into the user's folder under an
// Idempotency-Key.
func (u *docUser) uploadWithKey(key, filename string, content []byte) *response {
	u.t.Helper()
	body := multipartParts(u.t, field("folder_id", strconv.FormatInt(u.folder.FolderID, 10)), filePart(filename, content))
	return u.do("POST", "/apiv2/pub/documents/upload", body, "Idempotency-Key", key)
}

// documentsWithHash counts the documents whose file has content's hash.
func documentsWithHash(t *testing.T, content []byte) int {
	t.Helper()
	var n int
	if err := stk.pool.QueryRow(context.Background(), `SELECT count(DISTINCT doc_id) FROM document.linked_files WHERE filehash = $1`,
		sha256Hex(content)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// An upload repeated under the same Idempotency-Key (a client's retry, a
// resumed import) creates one document, one created event and keeps no
// second copy of the bytes; parallel repeats agree on the one document;
// keys belong to their user; other bytes under a used key are a 409.
func TestUploadIdempotencyKey(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	content := uniqText(t, 2000)
	key := uniq("import:a/b.txt")

	first := u.uploadWithKey(key, "b.txt", content)
	expect(t, first, 200)
	var a, b uploadResult
	first.JSON(t, &a)
	again := u.uploadWithKey(key, "b.txt", content)
	expect(t, again, 200)
	again.JSON(t, &b)
	if a != b {
		t.Fatalf("the repeat answered %+v, want the first upload's %+v", b, a)
	}
	if n := documentsWithHash(t, content); n != 1 {
		t.Fatalf("%d documents hold the content, want 1", n)
	}
	if ev := docEvents(t, a.DocID); len(ev) != 1 || ev[0].Kind != "created" {
		t.Fatalf("events of the document = %+v, want one created", ev)
	}
	if blobs := stackBlobsWithContent(t, content); len(blobs) > 1 {
		t.Fatalf("the repeat left a second copy of the bytes: %v", blobs)
	}

	t.Run("parallel repeats", func(t *testing.T) {
		content := uniqText(t, 3000)
		key := uniq("retry")
		const n = 8
		ids := make([]int64, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := u.uploadWithKey(key, "p.txt", content)
				if r.Status != 200 {
					t.Errorf("upload %d: %d %s", i, r.Status, r.Body)
					return
				}
				var res uploadResult
				r.JSON(t, &res)
				ids[i] = res.DocID
			}()
		}
		wg.Wait()
		for i, id := range ids {
			if id != ids[0] {
				t.Fatalf("parallel uploads under one key got documents %v, want one", ids)
			}
			_ = i
		}
		if got := documentsWithHash(t, content); got != 1 {
			t.Fatalf("%d documents hold the content, want 1", got)
		}
	})
	t.Run("other bytes under a used key", func(t *testing.T) {
		expect(t, u.uploadWithKey(key, "b.txt", uniqText(t, 100)), 409, "Idempotency-Key "+strconv.Quote(key)+" was already used for an upload of a different file")
	})
	t.Run("another user's key", func(t *testing.T) {
		other := newDocUser(t)
		r := other.uploadWithKey(key, "b.txt", content)
		expect(t, r, 200)
		var c uploadResult
		r.JSON(t, &c)
		if c.DocID == a.DocID {
			t.Fatalf("another user's upload under the same key returned the first user's document %d", a.DocID)
		}
	})
	t.Run("no key creates anew", func(t *testing.T) {
		c := u.uploadFile("b.txt", content)
		if c.DocID == a.DocID {
			t.Fatalf("an upload without a key returned document %d again", c.DocID)
		}
	})
	for _, bad := range []string{strings.Repeat("k", 256), "", "tab\tkey", "é"} {
		t.Run("invalid key "+strconv.Quote(bad[:min(len(bad), 8)]), func(t *testing.T) {
			expect(t, u.uploadWithKey(bad, "b.txt", content), 400, "Invalid Idempotency-Key: 1 to 255 printable ASCII characters, no surrounding spaces")
		})
	}
}

// A replay of an upload after the document changed — a new version, a
// lock, a PATCH — answers the first upload's result (never a 500, never a
// second document), and parallel replays agree on it.
func TestUploadReplayAfterDocumentChanged(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	content := uniqText(t, 500)
	key := uniq("replay")
	r := u.uploadWithKey(key, "first.txt", content)
	expect(t, r, 200)
	var first uploadResult
	r.JSON(t, &first)
	base := "/apiv3/pub/documents/" + strconv.FormatInt(first.DocID, 10)

	replay := func(t *testing.T) {
		t.Helper()
		r := u.uploadWithKey(key, "first.txt", content)
		expect(t, r, 200)
		var got uploadResult
		r.JSON(t, &got)
		if got != first {
			t.Fatalf("replay answered %+v, want the first upload's %+v", got, first)
		}
	}
	steps := []struct {
		name   string
		change func(t *testing.T)
	}{
		{name: "after a new version", change: func(t *testing.T) {
			expect(t, u.do("POST", base+"/versions", multipartParts(t, filePart("second.txt", uniqText(t, 50)))), 200)
		}},
		{name: "after a PATCH", change: func(t *testing.T) {
			expect(t, u.do("PATCH", base, map[string]any{"description": "renamed"}), 200)
		}},
		{name: "while locked", change: func(t *testing.T) {
			expect(t, u.do("POST", base+"/lock", nil), 200)
		}},
		{name: "after a second new version, unlocked", change: func(t *testing.T) {
			expect(t, u.do("POST", base+"/unlock", nil), 200)
			expect(t, u.do("POST", base+"/versions", multipartParts(t, filePart("third.txt", uniqText(t, 50)))), 200)
		}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			step.change(t)
			replay(t)
		})
	}
	t.Run("parallel replays", func(t *testing.T) {
		const n = 8
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := u.uploadWithKey(key, "first.txt", content)
				if r.Status != 200 {
					t.Errorf("parallel replay: %d %s", r.Status, r.Body)
					return
				}
				var got uploadResult
				r.JSON(t, &got)
				if got != first {
					t.Errorf("parallel replay answered %+v, want %+v", got, first)
				}
			}()
		}
		wg.Wait()
	})
	t.Run("other bytes", func(t *testing.T) {
		expect(t, u.uploadWithKey(key, "first.txt", uniqText(t, 20)), 409,
			"Idempotency-Key "+strconv.Quote(key)+" was already used for an upload of a different file")
	})
	if n := documentsWithHash(t, content); n != 0 {
		// The content is archived now; no current file holds it again.
		t.Fatalf("%d documents hold the first content as their current file, want 0", n)
	}
	if ev := docEvents(t, first.DocID); len(ev) != 6 {
		t.Fatalf("events of the document = %+v, want created + 5 changes and nothing from the replays", ev)
	}
}
