package blob

import (
	"context"
	"errors"
	"io"
	"time"
)

// Store holds file bytes under keys. Implementations are safe for concurrent
// use.
type Store interface {
	// Put stores everything read from r under key, replacing any object
	// already there, and returns the number of bytes stored. It streams: memory
	// use does not grow with the size of the object. The new object becomes
	// visible only once complete. If Put fails, for example because r fails
	// or ctx is cancelled, nothing partial is ever visible: the key keeps its
	// previous object (or stays absent), except that a failure at the very
	// end (a cancellation racing the final request, a failed directory sync)
	// may leave the complete new object in place. Put checks ctx between
	// reads of r; a Read that blocks is not interrupted.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)

	// Open opens the object under key for reading. The caller must Close it.
	// Some implementations keep using ctx while the object is read, so ctx must
	// stay live until the caller is done with the object.
	Open(ctx context.Context, key string) (Object, error)

	// Stat returns the object's metadata without opening it.
	Stat(ctx context.Context, key string) (Info, error)

	// Delete removes the object under key. Deleting a missing key is not an
	// error.
	Delete(ctx context.Context, key string) error
}

// Object is an opened object. Read, Seek and ReadAt follow the io contracts;
// ReadAt does not move the offset used by Read and Seek. An Object is not
// safe for concurrent use unless the implementation says so.
type Object interface {
	io.Reader
	io.ReaderAt
	io.Seeker
	io.Closer

	// Size is the object's length in bytes.
	Size() int64
}

// Info describes a stored object.
type Info struct {
	Key     string
	Size    int64
	ModTime time.Time
}

var (
	// ErrNotFound reports that no object exists under the key.
	ErrNotFound = errors.New("object not found")

	// ErrInvalidKey reports a key that [ValidateKey] rejects.
	ErrInvalidKey = errors.New("invalid key")

	// ErrNilReader reports a Put given a nil io.Reader.
	ErrNilReader = errors.New("nil reader")
)

// Error records a failed operation on a key. Err is the cause; it is
// [ErrNotFound] or [ErrInvalidKey] (possibly wrapped) for those conditions,
// so errors.Is works through an *Error.
type Error struct {
	Op  string // "put", "open", "stat" or "delete"
	Key string
	Err error
}

func (e *Error) Error() string { return "blob " + e.Op + " " + quoteKey(e.Key) + ": " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// IsNotFound reports whether err says the object does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// quoteKey keeps error messages readable and single-line even for the
// hostile keys that validation rejects.
func quoteKey(k string) string {
	const max = 120
	if len(k) > max {
		k = k[:max] + "..."
	}
	b := make([]byte, 0, len(k)+2)
	b = append(b, '"')
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c >= 0x7f:
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'x', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}
