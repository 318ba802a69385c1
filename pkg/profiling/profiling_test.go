package profiling

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/launcher"
)

func TestServeAnswersProfilesAndStopsWithContext(t *testing.T) {
	// Serve listens itself: the address comes from below the kernel's
	// range for outgoing connections, which any connection on the machine
	// could otherwise take between a port-0 listener's close and Serve.
	addr, err := launcher.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, addr, slog.New(slog.DiscardHandler)) }()
	var body string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/debug/pprof/")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		break
	}
	if !strings.Contains(body, "goroutine") {
		t.Fatalf("pprof index = %q, want the profile list", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve after cancel: %v", err)
	}
}

// TestServeNeverFailsTheService: an address that cannot be listened on is
// logged, not returned (profiling must not stop a service).
func TestServeNeverFailsTheService(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	if err := Serve(context.Background(), lis.Addr().String(), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("Serve on a busy port: %v, want nil", err)
	}
}
