package blob_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/blob"
)

func TestValidateKeyAcceptsSafePathsOnly(t *testing.T) {
	tests := []struct {
		name  string
		key   string
		valid bool
	}{
		{name: "single segment", key: "a", valid: true},
		{name: "nested path with extension", key: "docs/2024/ab/3f9c-file.pdf", valid: true},
		{name: "all allowed characters", key: "AZaz09_.-/x", valid: true},
		{name: "inner dot", key: "a.b.c", valid: true},
		{name: "longest segment", key: strings.Repeat("s", blob.MaxSegmentLen), valid: true},
		{name: "longest key", key: longKey(blob.MaxKeyLen), valid: true},

		{name: "empty", key: ""},
		{name: "too long", key: longKey(blob.MaxKeyLen + 1)},
		{name: "segment too long", key: "a/" + strings.Repeat("s", blob.MaxSegmentLen+1)},
		{name: "leading slash", key: "/etc/passwd"},
		{name: "trailing slash", key: "a/"},
		{name: "double slash", key: "a//b"},
		{name: "dot dot segment", key: "a/../b"},
		{name: "dot dot alone", key: ".."},
		{name: "dot dot inside a name", key: "a..b"},
		{name: "dot segment", key: "a/./b"},
		{name: "hidden name", key: ".tmp/x"},
		{name: "hidden name in subdirectory", key: "a/.x"},
		{name: "backslash", key: `a\b`},
		{name: "space", key: "a b"},
		{name: "NUL byte", key: "a\x00b"},
		{name: "newline", key: "a\nb"},
		{name: "non-ASCII", key: "dokumentä"},
		{name: "colon", key: "c:x"},
		{name: "percent", key: "a%2e%2e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := blob.ValidateKey(tt.key)
			if tt.valid {
				if err != nil {
					t.Fatalf("ValidateKey(%q) = %v, want nil", tt.key, err)
				}
				return
			}
			if !errors.Is(err, blob.ErrInvalidKey) {
				t.Fatalf("ValidateKey(%q) = %v, want ErrInvalidKey", tt.key, err)
			}
		})
	}
}

func TestErrorWrapsCause(t *testing.T) {
	tests := []struct {
		name         string
		err          error
		wantNotFound bool
		wantInvalid  bool
		wantMessage  string
	}{
		{
			name:         "not found",
			err:          &blob.Error{Op: "open", Key: "a/b", Err: blob.ErrNotFound},
			wantNotFound: true,
			wantMessage:  `blob open "a/b": object not found`,
		},
		{
			name:        "invalid key is quoted safely",
			err:         blob.CheckKey("put", "a\n\"b"),
			wantInvalid: true,
			wantMessage: `blob put "a\x0a\"b": invalid key: byte 0x0a at offset 1 is not one of a-z A-Z 0-9 / _ . -`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := blob.IsNotFound(tt.err); got != tt.wantNotFound {
				t.Errorf("IsNotFound = %v, want %v", got, tt.wantNotFound)
			}
			if got := errors.Is(tt.err, blob.ErrInvalidKey); got != tt.wantInvalid {
				t.Errorf("errors.Is(ErrInvalidKey) = %v, want %v", got, tt.wantInvalid)
			}
			var e *blob.Error
			if !errors.As(tt.err, &e) {
				t.Fatalf("errors.As(*blob.Error) failed for %v", tt.err)
			}
			if got := tt.err.Error(); got != tt.wantMessage {
				t.Errorf("Error() = %q, want %q", got, tt.wantMessage)
			}
		})
	}
}

// longKey returns a valid key of exactly n bytes (n >= 1): 200-byte
// segments and a shorter last one.
func longKey(n int) string {
	const seg = 200
	var b strings.Builder
	for b.Len()+seg+1 < n {
		b.WriteString(strings.Repeat("k", seg) + "/")
	}
	b.WriteString(strings.Repeat("k", n-b.Len()))
	return b.String()
}
