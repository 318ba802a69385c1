package s3store_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/docrepo/docrepo/pkg/blob"
	"github.com/docrepo/docrepo/pkg/blob/blobtest"
	"github.com/docrepo/docrepo/pkg/blob/s3store"
	"github.com/docrepo/docrepo/pkg/testenv/miniotest"
)

// One MinIO server for the whole package; each test gets its own bucket.
func TestMain(m *testing.M) { os.Exit(miniotest.Run(m)) }

// config returns a Config for a fresh bucket on the shared server.
func config(t testing.TB, srv *miniotest.Server, partSize uint64) s3store.Config {
	return s3store.Config{
		Endpoint:  srv.Endpoint,
		AccessKey: srv.AccessKey,
		SecretKey: srv.SecretKey,
		Bucket:    srv.BucketName(t),
		Region:    srv.Region,
		PartSize:  partSize,
	}
}

func newStore(t testing.TB, partSize uint64) *s3store.Store {
	t.Helper()
	srv := miniotest.Start(t)
	s, err := s3store.New(t.Context(), config(t, srv, partSize))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func TestConformanceSuitePassesAndLeavesNoIncompleteUploads(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		// The smallest part size makes the multi-MB cases span several parts.
		s := newStore(t, s3store.MinPartSize)
		// Failed and cancelled Puts must not leave multipart uploads (and
		// their stored parts) behind.
		t.Cleanup(func() {
			if left := incompleteUploads(t, s); len(left) > 0 {
				t.Errorf("incomplete multipart uploads left: %v", left)
			}
		})
		return s
	}, blobtest.Options{
		StreamSize: 128 << 20,
		// One 5 MiB part, minio-go's copies around it, GC slack.
		MaxHeapGrowth: 32 << 20,
	})
}

// TestPartSizeIsHonoured reads the part count from the multipart ETag
// ("<md5>-<parts>"), which shows how Put cut the body.
func TestPartSizeIsHonoured(t *testing.T) {
	tests := []struct {
		name      string
		partSize  uint64
		size      int
		wantParts string // "" means a single PUT (no dash in the ETag)
	}{
		{name: "small body is one PUT", partSize: s3store.MinPartSize, size: 1000, wantParts: ""},
		{name: "just under the single-PUT limit", partSize: s3store.MinPartSize, size: 1<<20 - 1, wantParts: ""},
		{name: "at the single-PUT limit goes multipart", partSize: s3store.MinPartSize, size: 1 << 20, wantParts: "1"},
		{name: "11 MiB in 5 MiB parts", partSize: s3store.MinPartSize, size: 11 << 20, wantParts: "3"},
		{name: "11 MiB in 6 MiB parts", partSize: 6 << 20, size: 11 << 20, wantParts: "2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t, tt.partSize)
			ctx := t.Context()
			if _, err := s.Put(ctx, "obj", bytes.NewReader(make([]byte, tt.size))); err != nil {
				t.Fatal(err)
			}
			st, err := s.Client().StatObject(ctx, s.Bucket(), "obj", minio.StatObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			gotParts := ""
			if i := strings.LastIndexByte(st.ETag, '-'); i >= 0 {
				gotParts = st.ETag[i+1:]
			}
			if gotParts != tt.wantParts || st.Size != int64(tt.size) {
				t.Fatalf("ETag %q, size %d: parts %q, want parts %q and size %d", st.ETag, st.Size, gotParts, tt.wantParts, tt.size)
			}
		})
	}
}

func TestNewCreatesBucketOnce(t *testing.T) {
	srv := miniotest.Start(t)
	cfg := config(t, srv, 0)
	ctx := t.Context()
	first, err := s3store.New(ctx, cfg)
	if err != nil {
		t.Fatalf("New on a missing bucket: %v", err)
	}
	if ok, err := first.Client().BucketExists(ctx, cfg.Bucket); err != nil || !ok {
		t.Fatalf("BucketExists after New = %v, %v; want true", ok, err)
	}
	if _, err := first.Put(ctx, "kept", strings.NewReader("data")); err != nil {
		t.Fatal(err)
	}
	second, err := s3store.New(ctx, cfg)
	if err != nil {
		t.Fatalf("New on an existing bucket: %v", err)
	}
	if info, err := second.Stat(ctx, "kept"); err != nil || info.Size != 4 {
		t.Fatalf("object written before the second New: %+v, %v", info, err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	srv := miniotest.Start(t)
	tests := []struct {
		name    string
		edit    func(*s3store.Config)
		wantErr string
	}{
		{name: "empty endpoint", edit: func(c *s3store.Config) { c.Endpoint = "" }, wantErr: "empty endpoint"},
		{name: "endpoint with scheme", edit: func(c *s3store.Config) { c.Endpoint = "http://" + c.Endpoint }, wantErr: "without a scheme"},
		{name: "empty bucket", edit: func(c *s3store.Config) { c.Bucket = "" }, wantErr: "empty bucket"},
		{name: "part size below S3 minimum", edit: func(c *s3store.Config) { c.PartSize = 1 << 20 }, wantErr: "below the S3 minimum"},
		{name: "wrong secret", edit: func(c *s3store.Config) { c.SecretKey = "wrong" }, wantErr: "signature"},
		{name: "invalid bucket name", edit: func(c *s3store.Config) { c.Bucket = "Not_Valid" }, wantErr: "Not_Valid"},
		{name: "nothing listening", edit: func(c *s3store.Config) { c.Endpoint = "127.0.0.1:1" }, wantErr: "127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config(t, srv, 0)
			tt.edit(&cfg)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			s, err := s3store.New(ctx, cfg)
			if err == nil {
				t.Fatalf("New succeeded (%v), want an error mentioning %q", s.Bucket(), tt.wantErr)
			}
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tt.wantErr)) {
				t.Fatalf("New error %q does not mention %q", err, tt.wantErr)
			}
		})
	}
}

// BenchmarkPut writes 32 MiB and 256 MiB objects with the default 16 MiB
// parts to a local MinIO; the heap metrics should not depend on the size.
func BenchmarkPut(b *testing.B) {
	for _, size := range []int64{32 << 20, 256 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			blobtest.BenchmarkPut(b, newStore(b, s3store.DefaultPartSize), size)
		})
	}
}

// incompleteUploads lists the keys with unfinished multipart uploads.
func incompleteUploads(t *testing.T, s *s3store.Store) []string {
	t.Helper()
	// t.Context is already cancelled when cleanups run.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var keys []string
	for u := range s.Client().ListIncompleteUploads(ctx, s.Bucket(), "", true) {
		if u.Err != nil {
			t.Errorf("ListIncompleteUploads: %v", u.Err)
			break
		}
		keys = append(keys, u.Key)
	}
	return keys
}

// TestIncompleteUploadsAreDetected makes sure the leftover check used by
// TestConformanceSuitePassesAndLeavesNoIncompleteUploads can see an abandoned multipart upload at all.
func TestIncompleteUploadsAreDetected(t *testing.T) {
	s := newStore(t, 0)
	core := minio.Core{Client: s.Client()}
	const key = "abandoned/upload.bin"
	if _, err := core.NewMultipartUpload(t.Context(), s.Bucket(), key, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := incompleteUploads(t, s); len(got) != 1 || got[0] != key {
		t.Fatalf("incompleteUploads = %v, want [%s]", got, key)
	}
}

// TestOpenObjectNeverMixesVersions overwrites an object while it is open:
// reads must return the first version or fail, never bytes of the second.
func TestOpenObjectNeverMixesVersions(t *testing.T) {
	s := newStore(t, 0)
	ctx := t.Context()
	first := bytes.Repeat([]byte{'A'}, 3<<20)
	second := bytes.Repeat([]byte{'B'}, 3<<20)
	if _, err := s.Put(ctx, "doc", bytes.NewReader(first)); err != nil {
		t.Fatal(err)
	}
	obj, err := s.Open(ctx, "doc")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if _, err := s.Put(ctx, "doc", bytes.NewReader(second)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		read func() ([]byte, error)
	}{
		{name: "ReadAt", read: func() ([]byte, error) {
			buf := make([]byte, 1000)
			n, err := obj.ReadAt(buf, 1<<20)
			return buf[:n], err
		}},
		{name: "Read after Seek", read: func() ([]byte, error) {
			if _, err := obj.Seek(2<<20, io.SeekStart); err != nil {
				return nil, err
			}
			buf := make([]byte, 1000)
			n, err := io.ReadFull(obj, buf)
			return buf[:n], err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.read()
			t.Logf("read %d bytes, err %v", len(got), err)
			if bytes.Contains(got, []byte{'B'}) {
				t.Fatalf("read bytes of the second version through the object opened on the first")
			}
			if err == nil && len(got) == 0 {
				t.Fatalf("read nothing and no error")
			}
		})
	}
}
