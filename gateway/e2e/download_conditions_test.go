package e2e

import (
	"bytes"
	"mime"
	"strings"
	"testing"
)

// TestContentDispositionIsWellFormed: the filename* parameter (RFC 8187)
// may carry only attr-chars and %-escapes, or a strict parser rejects the
// header and a lax one may split it: names with ":", "=", "@", ";", quotes,
// spaces and non-ASCII letters must all come through as exactly one file
// name.
func TestContentDispositionIsWellFormed(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	for _, desc := range []string{
		"Über: a=b@c; filename=evil.exe",
		`Meeting 10:30 "final" (v2)`,
		"Rechnung Nr. 5 – März",
		"plain ascii; filename=x.exe",
	} {
		res := u.uploadFile("f.txt", []byte("content"), field("description", desc))
		r := u.do("GET", downloadPath(res.DocID, ""), nil)
		expect(t, r, 200)
		cd := r.Header.Get("Content-Disposition")
		_, params, err := mime.ParseMediaType(cd)
		if err != nil || params["filename"] != desc+".txt" {
			t.Errorf("%q: Content-Disposition %q parses to %q (%v), want filename %q", desc, cd, params["filename"], err, desc+".txt")
		}
		if i := strings.Index(cd, "filename*="); i >= 0 {
			v := strings.TrimPrefix(cd[i:], "filename*=UTF-8''")
			for _, c := range v {
				if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$&+-.^_`|~%", c)) {
					t.Errorf("%q: filename* value %q has %q, not an RFC 8187 attr-char", desc, v, c)
					break
				}
			}
		}
	}
}

// TestUnsatisfiableRangeSaysTheFileSize: a 416 says how big the file is (RFC 9110
// §15.5.17: Content-Range: bytes */SIZE), and the preconditions that come
// before Range in RFC 9110 §13.2.2 still apply: a stale If-Range means the
// whole file (200), a matching If-None-Match means 304.
func TestUnsatisfiableRangeSaysTheFileSize(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	content := []byte("hello world")
	res := u.uploadFile("h.txt", content)
	path := downloadPath(res.DocID, "")
	etag := `"` + sha256Hex(content) + `"`

	for _, method := range []string{"GET", "HEAD"} {
		r := u.do(method, path, nil, "Range", "bytes=100-")
		if r.Status != 416 || r.Header.Get("Content-Range") != "bytes */11" {
			t.Fatalf("%s beyond the end: %d, Content-Range %q; want 416 with bytes */11", method, r.Status, r.Header.Get("Content-Range"))
		}
	}
	expect(t, u.do("GET", path, nil, "Range", "bytes=100-"), 416, "Requested range not satisfiable")

	r := u.do("GET", path, nil, "Range", "bytes=100-", "If-Range", `"0000"`)
	expect(t, r, 200)
	if !bytes.Equal(r.Body, content) {
		t.Fatalf("stale If-Range: body %q, want the whole file", r.Body)
	}
	r = u.do("GET", path, nil, "Range", "bytes=100-", "If-None-Match", etag)
	expect(t, r, 304)

	// An empty file has no satisfiable range at all.
	empty := u.uploadFile("e.txt", nil)
	r = u.do("GET", downloadPath(empty.DocID, ""), nil, "Range", "bytes=0-")
	if r.Status != 416 || r.Header.Get("Content-Range") != "bytes */0" {
		t.Fatalf("range of an empty file: %d, Content-Range %q", r.Status, r.Header.Get("Content-Range"))
	}
}

// TestInvalidRangeIsIgnored: a Range header that does not follow the
// grammar of RFC 9110 §14.1.1 is ignored (the whole file), not read loosely.
func TestInvalidRangeIsIgnored(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	content := []byte("0123456789")
	res := u.uploadFile("d.txt", content)
	for _, h := range []string{"bytes=+1-2", "bytes=1-+2", "bytes=-+3", "bytes=1 - 2", "bytes=0x1-2"} {
		r := u.do("GET", downloadPath(res.DocID, ""), nil, "Range", h)
		if r.Status != 200 || !bytes.Equal(r.Body, content) {
			t.Errorf("Range %q: %d %q, want 200 and the whole file", h, r.Status, r.Body)
		}
	}
}
