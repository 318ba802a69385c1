package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

// lockServer answers ListLocks in pages of one and records BreakLock calls
// and the credentials they came with.
type lockServer struct {
	documentv1.UnimplementedDocumentServiceServer
	locks []*documentv1.DocumentLock

	mu     sync.Mutex
	broken []*documentv1.BreakLockRequest
	auth   []string
}

func (s *lockServer) ListLocks(_ context.Context, req *documentv1.ListLocksRequest) (*documentv1.ListLocksResponse, error) {
	i := 0
	if req.GetPageToken() != "" {
		i = 1
	}
	out := &documentv1.ListLocksResponse{Locks: s.locks[i : i+1]}
	if i+1 < len(s.locks) {
		out.NextPageToken = "next"
	}
	return out, nil
}

func (s *lockServer) BreakLock(ctx context.Context, req *documentv1.BreakLockRequest) (*documentv1.BreakLockResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.broken = append(s.broken, req)
	s.auth = append(s.auth, md.Get("authorization")...)
	return &documentv1.BreakLockResponse{Broken: s.locks[0]}, nil
}

// docrepoctl lock list pages through every lock; lock break sends the
// document and the reason with the given credential; arguments it cannot
// use are refused before any call.
func TestLockCommand(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	srv := &lockServer{locks: []*documentv1.DocumentLock{
		{DocId: 7, HolderUserId: 3, HolderUsername: "alice", LockedAt: timestamppb.New(at)},
		{DocId: 9, HolderUserId: 4, HolderUsername: "bob", LockedAt: timestamppb.New(at), ExpiresAt: timestamppb.New(at.Add(time.Hour))},
	}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	documentv1.RegisterDocumentServiceServer(g, srv)
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()
	addr := lis.Addr().String()
	getenv := func(string) string { return "" }

	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"lock", "list", "-addr", addr, "-token", "drs_t"}, &out, &errOut, getenv); err != nil {
		t.Fatalf("lock list: %v (%s)", err, errOut.String())
	}
	for _, want := range []string{"7    alice", "9    bob", "2026-01-02T03:04:05Z  ", "never", "2026-01-02T04:04:05Z"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("lock list output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := run(context.Background(), []string{"lock", "break", "7", "-reason", "alice left", "-addr", addr, "-token", "drs_t"}, &out, &errOut, getenv); err != nil {
		t.Fatalf("lock break: %v", err)
	}
	if !strings.Contains(out.String(), "broke the lock of document 7 held by alice (user 3)") {
		t.Errorf("lock break output %q", out.String())
	}
	if len(srv.broken) != 1 || srv.broken[0].GetDocId() != 7 || srv.broken[0].GetReason() != "alice left" || srv.auth[0] != "Bearer drs_t" {
		t.Fatalf("BreakLock calls %v with %v", srv.broken, srv.auth)
	}

	refusals := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no subcommand", args: []string{"lock"}, wantErr: "usage: docrepoctl lock list"},
		{name: "unknown subcommand", args: []string{"lock", "steal", "7"}, wantErr: "usage: docrepoctl lock list"},
		{name: "no reason", args: []string{"lock", "break", "7", "-addr", addr, "-token", "drs_t"}, wantErr: "-reason is required"},
		{name: "not an id", args: []string{"lock", "break", "seven", "-reason", "x", "-addr", addr, "-token", "drs_t"}, wantErr: "is not a document id"},
		{name: "no id", args: []string{"lock", "break", "-reason", "x", "-addr", addr, "-token", "drs_t"}, wantErr: "expected 1 argument"},
		{name: "list takes no argument", args: []string{"lock", "list", "7", "-addr", addr, "-token", "drs_t"}, wantErr: "expected 0 argument"},
	}
	for _, tc := range refusals {
		err := run(context.Background(), tc.args, &out, &errOut, getenv)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
	if len(srv.broken) != 1 {
		t.Fatalf("a refused command called BreakLock: %v", srv.broken)
	}
}
