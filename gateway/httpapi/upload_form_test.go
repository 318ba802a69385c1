package httpapi

import (
	"errors"
	"io"
	"mime/multipart"
	"strings"
	"testing"
	"testing/iotest"
)

// TestFormReaderNeedsTheClosingBoundary: only a form that ends with its
// closing delimiter is complete; every way of ending early is a client body
// error, however the body is split into reads.
func TestFormReaderNeedsTheClosingBoundary(t *testing.T) {
	const head = "--b\r\nContent-Disposition: form-data; name=\"folder_id\"\r\n\r\n7\r\n" +
		"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.txt\"\r\n\r\nhello --b-- world"
	tests := []struct {
		name     string
		body     string
		complete bool
	}{
		{"complete", head + "\r\n--b--\r\n", true},
		{"complete without a final newline", head + "\r\n--b--", true},
		{"complete with an epilogue", head + "\r\n--b--\r\nbye\r\n", true},
		{"LF line endings", strings.ReplaceAll(head, "\r\n", "\n") + "\n--b--\n", true},
		{"an empty form", "--b--\r\n", true},
		{"empty body", "", false},
		{"ends inside the file", head, false},
		{"ends after a part delimiter", head + "\r\n--b\r\n", false},
		{"ends inside the delimiter", head + "\r\n--b", false},
		{"ends inside the closing delimiter", head + "\r\n--b-", false},
		{"no boundary at all", "just some text", false},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tt.body)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			body := newCloseWatcher(r, "b")
			fr := &formReader{mr: multipart.NewReader(body, "b"), body: body}
			var err error
			for {
				var p *multipart.Part
				if p, err = fr.next(); err != nil {
					break
				}
				if err = pump(p, func([]byte) error { return nil }); err != nil {
					break
				}
			}
			var clientErr errClientBody
			switch {
			case tt.complete && !errors.Is(err, io.EOF):
				t.Errorf("%s (one byte reads %v): %v, want io.EOF", tt.name, oneByte, err)
			case !tt.complete && !errors.As(err, &clientErr):
				t.Errorf("%s (one byte reads %v): %v, want a client body error", tt.name, oneByte, err)
			}
		}
	}
}
