package diskstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/docrepo/docrepo/pkg/blob"
	"github.com/docrepo/docrepo/pkg/blob/internal/ctxio"
)

const (
	// tmpDir holds Put's temporary files. Its name starts with a dot, which
	// blob.ValidateKey forbids, so it can never collide with an object.
	tmpDir = ".tmp"

	// staleAfter is how long a temporary file must have been left untouched
	// before New deletes it as the leftover of a crashed process. It is long
	// so that a live upload of another process sharing the root is never hit.
	staleAfter = 24 * time.Hour

	dirPerm  = 0o750
	filePerm = 0o640

	copyBufSize = 256 << 10
)

// Store keeps objects as files under a root directory. It is safe for
// concurrent use, also by several processes sharing the directory.
type Store struct {
	root *os.Root
}

var _ blob.Store = (*Store)(nil)

// New opens (creating it if needed) the store rooted at dir and removes
// temporary files that crashed processes left behind more than a day ago.
func New(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("diskstore: empty root directory")
	}
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("diskstore: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("diskstore: %w", err)
	}
	if err := root.MkdirAll(tmpDir, dirPerm); err != nil {
		root.Close()
		return nil, fmt.Errorf("diskstore: %w", err)
	}
	s := &Store{root: root}
	s.sweepTemp(time.Now().Add(-staleAfter))
	return s, nil
}

// Close releases the root directory handle. Objects opened earlier stay
// readable.
func (s *Store) Close() error { return s.root.Close() }

// Dir returns the root directory the store was opened with.
func (s *Store) Dir() string { return s.root.Name() }

// Put implements [blob.Store].
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (n int64, err error) {
	if err := blob.CheckPut(key, r); err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			err = &blob.Error{Op: "put", Key: key, Err: err}
		}
	}()
	if ctx.Err() != nil {
		return 0, context.Cause(ctx)
	}

	name := filepath.FromSlash(key)
	dir := path.Dir(key)
	if dir != "." {
		if err := s.root.MkdirAll(filepath.FromSlash(dir), dirPerm); err != nil {
			return 0, err
		}
	}

	tmp, tmpName, err := s.createTemp()
	if err != nil {
		return 0, err
	}
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close() // may already be closed; the error is irrelevant then
			s.root.Remove(tmpName)
		}
	}()

	n, err = copyBuffered(tmp, ctxio.Reader(ctx, r))
	if err != nil {
		return n, err
	}
	if err := tmp.Sync(); err != nil {
		return n, err
	}
	if err := tmp.Close(); err != nil {
		return n, err
	}
	// Last chance to honour a cancellation that arrived after the final Read.
	if ctx.Err() != nil {
		return n, context.Cause(ctx)
	}
	if err := s.root.Rename(tmpName, name); err != nil {
		return n, err
	}
	renamed = true
	// Make the rename durable. The object is already visible at this point,
	// so an error here means "complete but maybe not on disk after a crash".
	if err := s.syncDir(dir); err != nil {
		return n, fmt.Errorf("stored but not synced: %w", err)
	}
	return n, nil
}

// Open implements [blob.Store]. The returned object's ReadAt is safe for
// concurrent use. The object stays readable, unchanged, even if the key is
// overwritten or deleted while it is open.
func (s *Store) Open(ctx context.Context, key string) (blob.Object, error) {
	if err := blob.CheckKey("open", key); err != nil {
		return nil, err
	}
	f, err := s.root.Open(filepath.FromSlash(key))
	if err != nil {
		return nil, &blob.Error{Op: "open", Key: key, Err: mapNotFound(err)}
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = blob.ErrNotFound
	}
	if err != nil {
		f.Close()
		return nil, &blob.Error{Op: "open", Key: key, Err: err}
	}
	return &object{f: f, size: fi.Size()}, nil
}

// Stat implements [blob.Store].
func (s *Store) Stat(ctx context.Context, key string) (blob.Info, error) {
	if err := blob.CheckKey("stat", key); err != nil {
		return blob.Info{}, err
	}
	fi, err := s.root.Stat(filepath.FromSlash(key))
	if err == nil && !fi.Mode().IsRegular() {
		err = blob.ErrNotFound
	}
	if err != nil {
		return blob.Info{}, &blob.Error{Op: "stat", Key: key, Err: mapNotFound(err)}
	}
	return blob.Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Delete implements [blob.Store].
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.CheckKey("delete", key); err != nil {
		return err
	}
	name := filepath.FromSlash(key)
	// A directory is never an object; refuse to remove one, even when empty.
	if fi, err := s.root.Lstat(name); err == nil && fi.IsDir() {
		return nil
	}
	err := s.root.Remove(name)
	if err == nil || errors.Is(mapNotFound(err), blob.ErrNotFound) {
		return nil
	}
	return &blob.Error{Op: "delete", Key: key, Err: err}
}

// createTemp creates a new, empty temporary file under tmpDir.
func (s *Store) createTemp() (*os.File, string, error) {
	for range 3 {
		name := filepath.Join(tmpDir, "put-"+rand.Text())
		f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
		if errors.Is(err, fs.ErrExist) {
			continue // a 130-bit random name collided; astronomically unlikely
		}
		return f, name, err
	}
	return nil, "", errors.New("could not create a unique temporary file")
}

// syncDir fsyncs the directory (slash-separated, relative to the root) that
// holds a just-renamed file.
func (s *Store) syncDir(dir string) error {
	d, err := s.root.Open(filepath.FromSlash(dir))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// sweepTemp deletes temporary files not modified since cutoff. It is best
// effort: a store that cannot clean up still works.
func (s *Store) sweepTemp(cutoff time.Time) {
	d, err := s.root.Open(tmpDir)
	if err != nil {
		return
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() || fi.ModTime().After(cutoff) {
			continue
		}
		s.root.Remove(filepath.Join(tmpDir, e.Name()))
	}
}

// mapNotFound turns the errors that mean "no such object" into
// blob.ErrNotFound. ENOTDIR arises when a key's directory part names a file.
func mapNotFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return blob.ErrNotFound
	}
	return err
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// copyBuffered copies r to w through a pooled buffer. Unlike io.Copy it
// never hands r to (*os.File).ReadFrom, which would bypass the buffer and the
// context checks of r's wrapper.
func copyBuffered(w io.Writer, r io.Reader) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var n int64
	for {
		nr, rerr := r.Read(buf)
		if nr > 0 {
			nw, werr := w.Write(buf[:nr])
			n += int64(nw)
			if werr != nil {
				return n, werr
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// object is an opened file restricted to the blob.Object methods.
type object struct {
	f    *os.File
	size int64
}

func (o *object) Read(p []byte) (int, error)                { return o.f.Read(p) }
func (o *object) ReadAt(p []byte, off int64) (int, error)   { return o.f.ReadAt(p, off) }
func (o *object) Seek(off int64, whence int) (int64, error) { return o.f.Seek(off, whence) }
func (o *object) Close() error                              { return o.f.Close() }
func (o *object) Size() int64                               { return o.size }
