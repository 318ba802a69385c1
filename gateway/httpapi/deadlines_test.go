package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/logging"
)

// A request whose body stops arriving is cut after the stall timeout
// (it would otherwise hold a handler and a backend stream for ever), while
// a body that arrives slowly but steadily, taking several stall periods in
// all, is read to the end and answered.
func TestStalledBodiesAreCutSlowOnesAreNot(t *testing.T) {
	// The stall timeout is 10 times the slow client's pause between
	// bytes (a loaded machine may stretch a 100 ms pause a lot, but not
	// to a second), and the slow body takes more than twice the timeout in
	// all, so the test still tells a stall deadline from a total one.
	addr, conn := startStallGateway(t, time.Second)
	body := `{"name":"` + strings.Repeat("a", 100) + `"}`
	token, _ := auth.NewToken() // well-formed: the body is read
	head := fmt.Sprintf("POST /apiv2/pub/folders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", token, len(body))

	t.Run("stalled", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprint(c, head+body[:10]) // then nothing
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = io.ReadAll(c)
		if d := time.Since(start); err != nil || d > 5*time.Second {
			t.Fatalf("the stalled request's connection: %v after %v, want it closed by the server", err, d)
		}
	})
	t.Run("slow but steady", func(t *testing.T) {
		defer conn.Close()
		fmt.Fprint(conn, head)
		for i := 0; i < len(body); i += 5 {
			time.Sleep(100 * time.Millisecond) // 2.3 s in all, 100 ms between bytes
			fmt.Fprint(conn, body[i:min(i+5, len(body))])
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		status, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.HasPrefix(status, "HTTP/1.1 ") {
			t.Fatalf("the slow request got %q, %v; want an HTTP answer", status, err)
		}
	})
}

// A request refused before its body is read (the document service is
// unreachable: 503; no token: 401, from the gateway itself) is answered at
// once, though its announced body never arrives: the stall deadlines must
// not make the server drain a body the handler never read.
func TestRefusedUploadIsAnsweredWithoutItsBody(t *testing.T) {
	token, _ := auth.NewToken()
	tests := []struct {
		name          string
		authorization string
		want          string
	}{
		{name: "service unreachable", authorization: "Authorization: Bearer " + token + "\r\n", want: "HTTP/1.1 503"},
		{name: "no token", want: "HTTP/1.1 401"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := startStallGateway(t, time.Minute)
			defer c.Close()
			fmt.Fprintf(c, "POST /apiv2/pub/documents/upload HTTP/1.1\r\nHost: x\r\n%sContent-Type: multipart/form-data; boundary=b\r\nContent-Length: %d\r\n\r\n--b\r\n", tt.authorization, int64(1)<<30)
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			status, err := bufio.NewReader(c).ReadString('\n')
			if err != nil || !strings.HasPrefix(status, tt.want) {
				t.Fatalf("got %q, %v; want %q before the body", status, err, tt.want)
			}
		})
	}
}

// startStallGateway runs a gateway with the stall timeout (its backends
// unreachable) until the test ends, and returns its address and a
// connection to it.
func startStallGateway(t *testing.T, stall time.Duration) (string, net.Conn) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go func() {
		_ = Run(ctx, Config{
			Listener: lis, Logger: logging.NewTo(io.Discard, "gateway", "info", "json"),
			DocumentAddr: "127.0.0.1:1", FolderAddr: "127.0.0.1:1", SearchAddr: "127.0.0.1:1", SchemaAddr: "127.0.0.1:1",
			StallTimeout: stall,
		})
	}()
	addr := lis.Addr().String()
	for i := 0; ; i++ {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			return addr, conn
		}
		if i == 100 {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
