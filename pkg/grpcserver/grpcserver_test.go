package grpcserver_test

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	searchv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/search/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/grpcserver"
)

// tokens is an in-memory Authenticator: token -> principal.
type tokens map[string]*auth.Principal

func (t tokens) Authenticate(_ context.Context, token string) (*auth.Principal, error) {
	if p, ok := t[token]; ok {
		return p, nil
	}
	return nil, auth.ErrInvalidToken()
}

// searchHandler answers according to the query text in options; it lets the
// test drive the boundary's error and panic handling.
type searchHandler struct {
	searchv1.UnimplementedSearchServiceServer
	behave func(ctx context.Context) error
}

func (h searchHandler) Search(ctx context.Context, _ *searchv1.SearchRequest) (*searchv1.SearchResponse, error) {
	if err := h.behave(ctx); err != nil {
		return nil, err
	}
	p, _ := auth.FromContext(ctx)
	return &searchv1.SearchResponse{Total: p.UserID}, nil
}

func start(t *testing.T, behave func(ctx context.Context) error, toks tokens) *grpc.ClientConn {
	t.Helper()
	srv := grpcserver.New(grpcserver.Options{Name: "test", Authenticator: toks})
	searchv1.RegisterSearchServiceServer(srv.GRPC(), searchHandler{behave: behave})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	conn, err := grpcclient.Dial(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestBoundary(t *testing.T) {
	tok := func(p *auth.Principal) string { t, _ := auth.NewToken(); return t }
	searcher := &auth.Principal{UserID: 7, Username: "s", Scopes: []string{auth.ScopeSearch}}
	reader := &auth.Principal{UserID: 8, Username: "r", Scopes: []string{auth.ScopeDocumentsRead}}
	searcherTok, readerTok := tok(searcher), tok(reader)
	toks := tokens{searcherTok: searcher, readerTok: reader}

	tests := []struct {
		name       string
		token      string
		behave     func(ctx context.Context) error
		wantCode   codes.Code
		wantMsg    string
		wantUserID int64
	}{
		{name: "no token", token: "", wantCode: codes.Unauthenticated, wantMsg: "Invalid or expired token"},
		{name: "garbage token", token: "hello", wantCode: codes.Unauthenticated, wantMsg: "Invalid or expired token"},
		{name: "unknown well-formed token", token: func() string { t, _ := auth.NewToken(); return t }(), wantCode: codes.Unauthenticated, wantMsg: "Invalid or expired token"},
		{name: "missing scope", token: readerTok, wantCode: codes.PermissionDenied, wantMsg: "Missing required scope: search"},
		{name: "granted", token: searcherTok, wantCode: codes.OK, wantUserID: 7},
		{name: "domain error keeps its kind", token: searcherTok, behave: func(context.Context) error { return apierr.Locked("Document is locked") },
			wantCode: codes.FailedPrecondition, wantMsg: "Document is locked"},
		{name: "panic becomes internal", token: searcherTok, behave: func(context.Context) error { panic("boom") },
			wantCode: codes.Internal, wantMsg: "Internal server error"},
		{name: "an unreachable database is unavailable, not internal", token: searcherTok,
			behave:   func(context.Context) error { return apierr.Internal(fmt.Errorf("load: %w", pgconn.ErrConnClosed)) },
			wantCode: codes.Unavailable, wantMsg: "Service unavailable"},
		{name: "other internal errors stay internal", token: searcherTok,
			behave:   func(context.Context) error { return apierr.Internal(&pgconn.PgError{Code: "23505"}) },
			wantCode: codes.Internal, wantMsg: "Internal server error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			behave := tt.behave
			if behave == nil {
				behave = func(context.Context) error { return nil }
			}
			conn := start(t, behave, toks)
			ctx := context.Background()
			if tt.token != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tt.token)
			}
			resp, err := searchv1.NewSearchServiceClient(conn).Search(ctx, &searchv1.SearchRequest{})
			st := status.Convert(err)
			if st.Code() != tt.wantCode || (tt.wantMsg != "" && st.Message() != tt.wantMsg) {
				t.Fatalf("got %v %q, want %v %q", st.Code(), st.Message(), tt.wantCode, tt.wantMsg)
			}
			if err == nil && resp.GetTotal() != tt.wantUserID {
				t.Fatalf("handler saw user %d, want %d", resp.GetTotal(), tt.wantUserID)
			}
			if tt.wantMsg == "Document is locked" && apierr.HTTPStatus(st) != 423 {
				t.Fatalf("locked maps to HTTP %d, want 423", apierr.HTTPStatus(st))
			}
		})
	}
}

func TestHealthIsPublic(t *testing.T) {
	conn := start(t, func(context.Context) error { return nil }, tokens{})
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "docrepo.search.v1.SearchService"})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v, %v", resp, err)
	}
}
