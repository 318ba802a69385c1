package miniotest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// TestStartServesS3 checks that the server Start returns accepts its
// credentials and stores objects.
func TestStartServesS3(t *testing.T) {
	srv := Start(t)
	client := newClient(t, srv)
	ctx := t.Context()
	bucket := srv.BucketName(t)
	if err := client.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: srv.Region}); err != nil {
		t.Fatalf("MakeBucket(%q): %v", bucket, err)
	}
	payload := []byte("hello from miniotest")
	if _, err := client.PutObject(ctx, bucket, "k", bytes.NewReader(payload), int64(len(payload)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	obj, err := client.GetObject(ctx, bucket, "k", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	got, err := io.ReadAll(obj)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("GetObject = %q, %v; want %q", got, err, payload)
	}
}

func TestWrongCredentialsAreRejected(t *testing.T) {
	srv := Start(t)
	wrong := &Server{Endpoint: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: "not-the-secret", Region: srv.Region}
	_, err := newClient(t, wrong).ListBuckets(t.Context())
	if code := minio.ToErrorResponse(err).Code; code != "SignatureDoesNotMatch" {
		t.Fatalf("ListBuckets with a wrong secret: %v (code %q), want SignatureDoesNotMatch", err, code)
	}
}

func TestDedicatedServerStopsOnCleanup(t *testing.T) {
	var srv *Server
	t.Run("owner", func(t *testing.T) {
		srv = Start(t)
		if !live(srv) {
			t.Fatal("server not live right after Start")
		}
	})
	if srv == nil {
		t.Skip("the owner subtest did not get a server")
	}
	select {
	case <-srv.exited:
	case <-time.After(stopTimeout + time.Second):
		t.Fatal("server process still running after its test's cleanup")
	}
	if live(srv) {
		t.Fatal("server still answers after its test's cleanup")
	}
}

func TestShareReturnsOneServer(t *testing.T) {
	stop := Share()
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	first := Start(t)
	var second *Server
	t.Run("another test", func(t *testing.T) { second = Start(t) })
	if first != second {
		t.Fatalf("Start under Share returned two servers: %s and %s", first.Endpoint, second.Endpoint)
	}
	if !live(first) {
		t.Fatal("shared server not live")
	}
	stop()
	stopped = true
	if live(first) {
		t.Fatal("shared server still answers after stop")
	}
	// After stop, Start is back to dedicated servers.
	if third := Start(t); third == first {
		t.Fatal("Start after stop returned the stopped shared server")
	}
}

// fakeTB records Skipf and Fatalf instead of ending the test, so the
// missing-binary paths of Start can be observed.
type fakeTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped, f.msg = true, fmt.Sprintf(format, args...)
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
}

func TestMissingBinary(t *testing.T) {
	tests := []struct {
		name       string
		strict     string
		wantSkip   bool
		wantFail   bool
		wantInMsgs []string
	}{
		{name: "skips by default", strict: "", wantSkip: true,
			wantInMsgs: []string{"make test", "go install github.com/minio/minio@" + Version, "DOCREPO_TEST_STRICT=1"}},
		{name: "skips unless strict is exactly 1", strict: "true", wantSkip: true},
		{name: "fails when strict", strict: "1", wantFail: true,
			wantInMsgs: []string{"make test", "failure, not a skip"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			missing := filepath.Join(t.TempDir(), "no-minio")
			t.Setenv(EnvBinary, missing)
			t.Setenv(EnvStrict, tt.strict)
			f := &fakeTB{TB: t}
			if srv := Start(f); srv != nil {
				t.Fatalf("Start returned a server from a missing binary")
			}
			if f.skipped != tt.wantSkip || f.failed != tt.wantFail {
				t.Fatalf("skipped=%v failed=%v, want skipped=%v failed=%v (msg %q)", f.skipped, f.failed, tt.wantSkip, tt.wantFail, f.msg)
			}
			for _, want := range append(tt.wantInMsgs, missing) {
				if !strings.Contains(f.msg, want) {
					t.Errorf("message %q does not mention %q", f.msg, want)
				}
			}
		})
	}
}

func TestBinaryPath(t *testing.T) {
	tests := []struct {
		name   string
		bin    string
		xdg    string
		wanted string
	}{
		{name: "MINIO_BIN wins", bin: "/opt/minio/bin/minio", xdg: "/cache", wanted: "/opt/minio/bin/minio"},
		{name: "cache directory otherwise", bin: "", xdg: "/cache", wanted: "/cache/docrepo/tools/minio-" + Version + "/minio"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvBinary, tt.bin)
			t.Setenv("XDG_CACHE_HOME", tt.xdg)
			got, err := BinaryPath()
			if err != nil || got != tt.wanted {
				t.Fatalf("BinaryPath() = %q, %v; want %q", got, err, tt.wanted)
			}
		})
	}
}

var validBucket = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)

func TestBucketName(t *testing.T) {
	tests := []struct {
		name     string
		seq      uint64
		testName string
		want     string
	}{
		{name: "plain", seq: 1, testName: "TestPut", want: "t001-testput"},
		{name: "subtests and symbols", seq: 12, testName: "TestX/round_trip#01", want: "t012-testx-round-trip-01"},
		{name: "nothing usable", seq: 3, testName: "/_/", want: "t003"},
		{name: "long name is cut without a trailing dash", seq: 1000, testName: strings.Repeat("ab/", 40), want: "t1000" + strings.Repeat("-ab", 19)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := bucketName(tt.seq, tt.testName)
			if got != tt.want {
				t.Errorf("bucketName(%d, %q) = %q, want %q", tt.seq, tt.testName, got, tt.want)
			}
			if !validBucket.MatchString(got) {
				t.Errorf("bucketName(%d, %q) = %q is not a valid S3 bucket name", tt.seq, tt.testName, got)
			}
		})
	}
}

func TestBucketNamesAreUnique(t *testing.T) {
	srv := &Server{} // BucketName needs no running server
	seen := map[string]bool{}
	for range 100 {
		name := srv.BucketName(t)
		if seen[name] {
			t.Fatalf("BucketName returned %q twice", name)
		}
		seen[name] = true
	}
}

func newClient(t *testing.T, srv *Server) *minio.Client {
	t.Helper()
	client, err := minio.New(srv.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, ""),
		Region: srv.Region,
	})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func live(srv *Server) bool {
	client := &http.Client{Timeout: time.Second}
	resp, err := client.Get(srv.URL() + "/minio/health/live")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
