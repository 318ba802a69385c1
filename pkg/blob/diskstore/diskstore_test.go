package diskstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/blob"
	"github.com/docrepo/docrepo/pkg/blob/blobtest"
	"github.com/docrepo/docrepo/pkg/blob/diskstore"
)

func newStore(t testing.TB, dir string) *diskstore.Store {
	t.Helper()
	s, err := diskstore.New(dir)
	if err != nil {
		t.Fatalf("New(%q): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformanceSuitePassesAndLeavesNoTempFiles(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		s := newStore(t, t.TempDir())
		// Whatever the case did, including failed and cancelled Puts, no
		// temporary file may be left behind. (Runs before TempDir's cleanup.)
		t.Cleanup(func() {
			if left := tempFiles(t, s.Dir()); len(left) > 0 {
				t.Errorf("temporary files left in %s: %v", s.Dir(), left)
			}
		})
		return s
	}, blobtest.Options{
		// Put copies through one 256 KiB buffer; allow for GC slack only.
		MaxHeapGrowth: 8 << 20,
	})
}

func TestFailedPutRemovesTempFile(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name    string
		body    io.Reader
		cancel  bool
		wantErr error
	}{
		{name: "reader error", body: io.MultiReader(strings.NewReader("partial"), errReader{errBoom}), wantErr: errBoom},
		{name: "cancelled context", body: strings.NewReader("data"), cancel: true, wantErr: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t, t.TempDir())
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			if _, err := s.Put(ctx, "k/obj", tt.body); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Put = %v, want %v", err, tt.wantErr)
			}
			if left := tempFiles(t, s.Dir()); len(left) > 0 {
				t.Fatalf("temporary files left: %v", left)
			}
			if _, err := os.Stat(filepath.Join(s.Dir(), "k", "obj")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("object file exists after failed Put (stat err %v)", err)
			}
		})
	}
}

func TestNewSweepsStaleTempFiles(t *testing.T) {
	dir := t.TempDir()
	newStore(t, dir) // creates the layout
	tests := []struct {
		name     string
		age      time.Duration
		wantKept bool
	}{
		{name: "crash leftover from two days ago", age: 48 * time.Hour, wantKept: false},
		{name: "upload in progress elsewhere", age: time.Minute, wantKept: true},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, ".tmp", "put-"+strings.ReplaceAll(tt.name, " ", "-"))
		if err := os.WriteFile(path, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-tt.age)
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	newStore(t, dir)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, ".tmp", "put-"+strings.ReplaceAll(tt.name, " ", "-"))
			_, err := os.Stat(path)
			if kept := err == nil; kept != tt.wantKept {
				t.Fatalf("temp file kept = %v (stat err %v), want %v", kept, err, tt.wantKept)
			}
		})
	}
}

// TestSymlinkCannotEscapeRoot plants symbolic links under the root that
// point outside it. Key validation cannot see them; os.Root must stop them.
func TestSymlinkCannotEscapeRoot(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("top secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	s := newStore(t, root)
	if err := os.Symlink(outside, filepath.Join(root, "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "evilfile")); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	tests := []struct {
		name string
		call func() error
	}{
		{name: "Put through a directory link", call: func() error {
			_, err := s.Put(ctx, "evil/planted", strings.NewReader("x"))
			return err
		}},
		{name: "Open through a directory link", call: func() error {
			obj, err := s.Open(ctx, "evil/secret")
			if err == nil {
				obj.Close()
			}
			return err
		}},
		{name: "Open a file link", call: func() error {
			obj, err := s.Open(ctx, "evilfile")
			if err == nil {
				obj.Close()
			}
			return err
		}},
		{name: "Stat through a directory link", call: func() error {
			_, err := s.Stat(ctx, "evil/secret")
			return err
		}},
		{name: "Delete through a directory link", call: func() error {
			return s.Delete(ctx, "evil/secret")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Delete reports no error for a key it cannot see; what matters
			// is that nothing outside changed, checked below.
			if err := tt.call(); err == nil && !strings.HasPrefix(tt.name, "Delete") {
				t.Fatalf("succeeded, want an error")
			}
			if got, err := os.ReadFile(secret); err != nil || string(got) != "top secret" {
				t.Fatalf("file outside the root changed: %q, %v", got, err)
			}
			if _, err := os.Stat(filepath.Join(outside, "planted")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a file was planted outside the root (stat err %v)", err)
			}
		})
	}
}

func TestOpenObjectSurvivesOverwriteAndDelete(t *testing.T) {
	s := newStore(t, t.TempDir())
	ctx := t.Context()
	first := bytes.Repeat([]byte("first "), 1000)
	if _, err := s.Put(ctx, "doc", bytes.NewReader(first)); err != nil {
		t.Fatal(err)
	}
	obj, err := s.Open(ctx, "doc")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if _, err := s.Put(ctx, "doc", strings.NewReader("second")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "doc"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	if err != nil || !bytes.Equal(got, first) {
		t.Fatalf("open object read %d bytes, %v; want the %d bytes of the first version", len(got), err, len(first))
	}
}

func TestKeyAndPrefixConflict(t *testing.T) {
	s := newStore(t, t.TempDir())
	ctx := t.Context()
	if _, err := s.Put(ctx, "a", strings.NewReader("file")); err != nil {
		t.Fatal(err)
	}
	_, err := s.Put(ctx, "a/b", strings.NewReader("child"))
	if err == nil {
		t.Fatal(`Put("a/b") with "a" stored succeeded; a file cannot be a directory`)
	}
	var be *blob.Error
	if !errors.As(err, &be) || be.Op != "put" || be.Key != "a/b" {
		t.Fatalf("Put error %v is not a *blob.Error for a/b", err)
	}
	if left := tempFiles(t, s.Dir()); len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestNewRejectsEmptyDir(t *testing.T) {
	if _, err := diskstore.New(""); err == nil {
		t.Fatal(`New("") succeeded, want an error`)
	}
}

// tempFiles lists the files in the store's temporary directory.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, ".tmp"))
	if err != nil {
		t.Fatalf("reading temp dir: %v", err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestPutAfterTheDirectoryWasRemoved: Put remembers the directories it
// made; one removed behind the store's back (an operator cleaning up) is
// made again, and the object is stored and readable.
func TestPutAfterTheDirectoryWasRemoved(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := newStore(t, dir)
	if _, err := s.Put(ctx, "files/ab/one.txt", strings.NewReader("one")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "files")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "files/ab/two.txt", strings.NewReader("two")); err != nil {
		t.Fatalf("Put after the directory was removed: %v", err)
	}
	o, err := s.Open(ctx, "files/ab/two.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if b, _ := io.ReadAll(o); string(b) != "two" {
		t.Fatalf("read %q", b)
	}
}
