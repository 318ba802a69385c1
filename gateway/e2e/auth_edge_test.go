package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/auth"
	rest "github.com/docrepo/docrepo/pkg/client"
)

// startGateway runs another gateway process in front of the stack's
// services with env's settings, until the test ends, and returns its base
// URL.
func startGateway(t *testing.T, env ...string) string {
	t.Helper()
	return startVariant(t, []string{"gateway"}, env...).URL()
}

// rawRequest sends a request's head and the first bytes of a body that
// claims to be much longer, and returns the status line of the answer if
// one comes within wait while the rest of the body is held back. The
// gateway must not read the body of a request it refuses anyway.
func rawRequest(t *testing.T, base, method, path, authorization, contentType string, wait time.Duration) (string, bool) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: docrepo\r\nContent-Type: %s\r\nContent-Length: %d\r\n", method, path, contentType, 10<<20)
	if authorization != "" {
		head += "Authorization: " + authorization + "\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n--b\r\nContent-Disposition: form-data; name=\"folder_id\"\r\n\r\n1\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	line, err := bufio.NewReader(conn).ReadString('\n')
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(line), true
}

// A request the gateway will refuse for its credentials is answered before
// its body is read: without a token or with a malformed one at once, with
// a well-formed one as soon as the service refused it — even when the
// client holds the rest of its body back.
func TestRefusedBeforeTheBodyIsRead(t *testing.T) {
	t.Parallel()
	unknown, _ := auth.NewToken()
	base := startGateway(t, "DOCREPO_AUTH_FAILURE_RATE=1000", "DOCREPO_AUTH_FAILURE_BURST=1000")
	tests := []struct {
		name          string
		method, path  string
		authorization string
		contentType   string
	}{
		{name: "upload without a token", method: "POST", path: "/apiv2/pub/documents/upload", contentType: "multipart/form-data; boundary=b"},
		{name: "upload with a malformed token", method: "POST", path: "/apiv2/pub/documents/upload", authorization: "Bearer drk_short", contentType: "multipart/form-data; boundary=b"},
		{name: "upload with an unknown token", method: "POST", path: "/apiv2/pub/documents/upload", authorization: "Bearer " + unknown, contentType: "multipart/form-data; boundary=b"},
		{name: "new version with an unknown token", method: "POST", path: "/apiv3/pub/documents/1/versions", authorization: "Bearer " + unknown, contentType: "multipart/form-data; boundary=b"},
		{name: "JSON without a token", method: "POST", path: "/apiv2/pub/folders", contentType: "application/json"},
		{name: "JSON with another scheme", method: "POST", path: "/apiv2/pub/search", authorization: "Basic dXNlcjpwdw==", contentType: "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, ok := rawRequest(t, base, tt.method, tt.path, tt.authorization, tt.contentType, 5*time.Second)
			if !ok {
				t.Fatal("no answer within 5 s while the body was held back: the gateway waits for a body it will refuse")
			}
			if !strings.Contains(line, " 401 ") {
				t.Fatalf("answer %q, want 401", line)
			}
		})
	}
}

// Failed authentications are limited per client address: past the burst,
// requests with tokens no service accepted are answered 429 without a
// service being asked, while a token a service accepted keeps working from
// the same address.
func TestFailedAuthenticationsLimitedPerAddress(t *testing.T) {
	t.Parallel()
	base := startGateway(t, "DOCREPO_AUTH_FAILURE_RATE=0.01", "DOCREPO_AUTH_FAILURE_BURST=5")
	u := newUser(t, []string{uniq("g")})
	good := restClient(t, base, u.token)
	ctx := context.Background()
	if _, err := good.ListFolders(ctx, rest.FolderQuery{}); err != nil {
		t.Fatal(err)
	}
	var statuses []int
	for range 12 {
		random, _ := auth.NewToken()
		_, err := good.WithToken(random).ListFolders(ctx, rest.FolderQuery{})
		statuses = append(statuses, rest.StatusOf(err))
	}
	want := []int{401, 401, 401, 401, 401, 429, 429, 429, 429, 429, 429, 429}
	if fmt.Sprint(statuses) != fmt.Sprint(want) {
		t.Fatalf("12 random tokens from one address: %v, want %v", statuses, want)
	}
	var e *rest.Error
	_, err := good.WithToken("not-a-token").ListFolders(ctx, rest.FolderQuery{})
	if !errors.As(err, &e) || e.Status != 429 || e.RetryAfter <= 0 {
		t.Fatalf("a malformed token past the limit: %v, want 429 with Retry-After", err)
	}
	if _, err := good.ListFolders(ctx, rest.FolderQuery{}); err != nil {
		t.Fatalf("the accepted token from the same address: %v", err)
	}
}

// At most MaxStreams uploads and downloads run at once; another is
// answered 503 with Retry-After, and a slot is free again when one ends.
func TestStreamingRequestsCapped(t *testing.T) {
	t.Parallel()
	base := startGateway(t, "DOCREPO_MAX_STREAMS=1")
	du := newDocUser(t)
	c := restClient(t, base, du.token)
	ctx := context.Background()
	// A slow upload holds the one slot until its file is released.
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Add(1)
	var slowErr error
	go func() {
		defer wg.Done()
		_, slowErr = c.Upload(ctx, rest.Upload{FolderID: du.folder.FolderID, File: pr, Filename: "slow.txt"})
	}()
	// More than one chunk, so the first reaches the document service,
	// whose blob file shows the upload holds its slot.
	content := uniqText(t, 3<<20)
	written := make(chan error, 1)
	go func() { _, err := pw.Write(content); written <- err }()
	eventually(t, 30*time.Second, func() error {
		if len(blobsStartingWith(t, blobDir, content[:4096])) == 0 {
			return errors.New("the slow upload has not reached the document service")
		}
		return nil
	})
	var e *rest.Error
	_, err := c.Upload(ctx, rest.Upload{FolderID: du.folder.FolderID, File: strings.NewReader("quick"), Filename: "quick.txt"})
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || e.RetryAfter <= 0 {
		t.Fatalf("a second upload while one is in progress: %v, want 503 with Retry-After", err)
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	pw.Close()
	wg.Wait()
	if slowErr != nil {
		t.Fatalf("the slow upload: %v", slowErr)
	}
	if _, err := c.Upload(ctx, rest.Upload{FolderID: du.folder.FolderID, File: strings.NewReader("after"), Filename: "after.txt"}); err != nil {
		t.Fatalf("an upload after the slot was freed: %v", err)
	}
}
