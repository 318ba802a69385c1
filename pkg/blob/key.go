package blob

import (
	"fmt"
	"io"
	"strings"
)

const (
	// MaxKeyLen is the longest key accepted, in bytes (S3's limit).
	MaxKeyLen = 1024

	// MaxSegmentLen is the longest accepted segment between slashes, in
	// bytes (the usual file-name limit of local file systems).
	MaxSegmentLen = 255
)

// ValidateKey reports whether key is acceptable to every [Store]. A valid key
// is 1 to [MaxKeyLen] bytes of the characters a-z A-Z 0-9 / _ . - made of
// non-empty segments separated by single slashes, each at most
// [MaxSegmentLen] bytes and not starting with a dot; it contains no "..",
// and neither starts nor ends with a slash. Names beginning with a dot are
// reserved for the stores' own bookkeeping (such as temporary files).
//
// The returned error wraps [ErrInvalidKey] and says what is wrong.
func ValidateKey(key string) error {
	if err := validateKey(key); err != nil {
		return fmt.Errorf("%w: %s", ErrInvalidKey, err)
	}
	return nil
}

// CheckKey is ValidateKey wrapped in an [*Error] for op, for use by
// implementations at the top of every method.
func CheckKey(op, key string) error {
	if err := ValidateKey(key); err != nil {
		return &Error{Op: op, Key: key, Err: err}
	}
	return nil
}

// CheckPut is what implementations check at the top of Put: a valid key
// and a non-nil reader.
func CheckPut(key string, r io.Reader) error {
	if err := CheckKey("put", key); err != nil {
		return err
	}
	if r == nil {
		return &Error{Op: "put", Key: key, Err: ErrNilReader}
	}
	return nil
}

func validateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("empty")
	case len(key) > MaxKeyLen:
		return fmt.Errorf("longer than %d bytes", MaxKeyLen)
	case strings.Contains(key, ".."):
		return fmt.Errorf(`contains ".."`)
	}
	for i := 0; i < len(key); i++ {
		if !keyChar(key[i]) {
			return fmt.Errorf("byte %#02x at offset %d is not one of a-z A-Z 0-9 / _ . -", key[i], i)
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("empty segment (leading, trailing or double slash)")
		case len(seg) > MaxSegmentLen:
			return fmt.Errorf("segment longer than %d bytes", MaxSegmentLen)
		case seg[0] == '.':
			return fmt.Errorf("segment starts with a dot")
		}
	}
	return nil
}

func keyChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '/' || c == '_' || c == '.' || c == '-'
}
