package e2e

import (
	"bytes"
	"mime/multipart"
	"sort"
	"testing"
)

// multipartBody builds a multipart upload with fields then the file part.
// It returns a reader the client sends with the right Content-Type (see
// client.upload).
func multipartBody(t testing.TB, fields map[string]string, filename string, content []byte) *multipartPayload {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := w.WriteField(k, fields[k]); err != nil {
			t.Fatal(err)
		}
	}
	if filename != "" {
		fw, err := w.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(content); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &multipartPayload{Reader: bytes.NewReader(buf.Bytes()), contentType: w.FormDataContentType()}
}

// multipartPayload is a body with its own Content-Type.
type multipartPayload struct {
	*bytes.Reader
	contentType string
}
