package documentsvc

import (
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/blob"
)

func TestDetectType(t *testing.T) {
	zip := []byte("PK\x03\x04\x14\x00\x06\x00")
	ole := []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")
	tests := []struct {
		name     string
		declared string
		filename string
		head     []byte
		want     string
	}{
		{name: "declared wins", declared: "application/vnd.custom", filename: "a.pdf", head: []byte("%PDF-1.7"), want: "application/vnd.custom"},
		{name: "declared is normalised", declared: "Text/HTML; Charset=UTF-8", want: "text/html; charset=UTF-8"},
		{name: "octet-stream is sniffed", declared: "application/octet-stream", head: []byte("%PDF-1.7\n"), want: "application/pdf"},
		{name: "unparsable declared type is sniffed", declared: "garbage", head: []byte("GIF89a"), want: "image/gif"},
		{name: "type without subtype is sniffed", declared: "text", head: []byte("hello"), want: "text/plain; charset=utf-8"},
		{name: "docx", filename: "a.docx", head: zip, want: "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
		{name: "pptx upper case", filename: "A.PPTX", head: zip, want: "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
		{name: "odt", filename: "a.odt", head: zip, want: "application/vnd.oasis.opendocument.text"},
		{name: "zip stays zip", filename: "a.zip", head: zip, want: "application/zip"},
		{name: "csv named zip content stays zip", filename: "a.csv", head: zip, want: "application/zip"},
		{name: "legacy doc", filename: "a.doc", head: ole, want: "application/msword"},
		{name: "csv", filename: "t.csv", head: []byte("a,b\n"), want: "text/csv; charset=utf-8"},
		{name: "markdown", filename: "r.md", head: []byte("# Title\n"), want: "text/markdown; charset=utf-8"},
		{name: "json", filename: "d.json", head: []byte(`{"a":1}`), want: "application/json"},
		{name: "unknown extension", filename: "a.xyz", head: []byte("plain"), want: "text/plain; charset=utf-8"},
		{name: "image content beats extension", filename: "a.docx", head: []byte("\x89PNG\r\n\x1a\n"), want: "image/png"},
		{name: "empty file", filename: "empty.bin", head: nil, want: "text/plain; charset=utf-8"},
		{name: "binary", filename: "a.bin", head: []byte{0, 1, 2, 3, 0xff}, want: "application/octet-stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DetectType(tt.declared, tt.filename, tt.head); got != tt.want {
				t.Fatalf("DetectType(%q, %q) = %q, want %q", tt.declared, tt.filename, got, tt.want)
			}
		})
	}
}

func TestStorageNames(t *testing.T) {
	tests := []struct {
		filename string
		ext      string
	}{
		{filename: "report.PDF", ext: ".pdf"},
		{filename: "archive.tar.gz", ext: ".gz"},
		{filename: "noext", ext: ""},
		{filename: "evil.p/../hp", ext: ""},
		{filename: "x.verylongextension", ext: ""},
		{filename: "x.ph p", ext: ""},
		{filename: "x.üml", ext: ""},
		{filename: ".bashrc", ext: ".bashrc"},
		{filename: "a.", ext: ""},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.filename, func(t *testing.T) {
			name, key := newStorageName(tt.filename)
			if !strings.HasSuffix(name, tt.ext) || len(name) != 36+len(tt.ext) {
				t.Fatalf("image_name %q for %q, want a UUID plus %q", name, tt.filename, tt.ext)
			}
			if err := blob.ValidateKey(key); err != nil || !strings.HasSuffix(key, "/"+name) {
				t.Fatalf("key %q: %v", key, err)
			}
			if seen[key] {
				t.Fatalf("key %q generated twice", key)
			}
			seen[key] = true
		})
	}
}
