package e2e

import (
	"fmt"
	"strconv"
	"testing"
)

// TestDownloadHead answers HEAD with the download's headers and no body.
func TestDownloadHead(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	content := uniqText(t, 4096)
	res := u.uploadFile("notes.txt", content)
	path := fmt.Sprintf("/apiv2/pub/documents/%d/download", res.DocID)
	r := u.do("HEAD", path, nil)
	expect(t, r, 200)
	if len(r.Body) != 0 {
		t.Fatalf("HEAD sent %d body bytes", len(r.Body))
	}
	if got := r.Header.Get("Content-Length"); got != strconv.Itoa(len(content)) {
		t.Fatalf("Content-Length = %q, want %d", got, len(content))
	}
	if got := r.Header.Get("ETag"); got != `"`+sha256Hex(content)+`"` {
		t.Fatalf("ETag = %q", got)
	}
	// A HEAD answer has no body, so only the status tells.
	if r := newDocUser(t).do("HEAD", path, nil); r.Status != 404 {
		t.Fatalf("stranger's HEAD: %d, want 404", r.Status)
	}
}
