package auth

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/docrepo/docrepo/pkg/apierr"
	_ "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1" // registers DocumentService's access rules
	_ "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"   // registers FolderService's access rules
)

// keys is an Authenticator over a fixed set of tokens.
type keys map[string]*Principal

func (k keys) Authenticate(_ context.Context, token string) (*Principal, error) {
	if p, ok := k[token]; ok {
		return p, nil
	}
	return nil, ErrInvalidToken()
}

// TestAuthorizeDeniesByDefault: an RPC is reachable only as its declared
// access rule allows; one without a rule is refused whatever the caller
// holds, and every token problem is the same 401.
func TestAuthorizeDeniesByDefault(t *testing.T) {
	reader, _ := NewToken()
	searcher, _ := NewToken()
	service, _ := NewServiceToken()
	i := NewInterceptor(keys{
		reader:   {UserID: 1, Scopes: []string{ScopeDocumentsRead, ScopeDocumentsWrite, ScopeSearch}},
		searcher: {UserID: 2, Scopes: []string{ScopeSearch}},
		service:  {UserID: 3, Scopes: []string{ScopeInternal}, Service: "docrepo-service"},
	})
	const (
		listFolders = "/docrepo.folder.v1.FolderService/ListFolders"
		// foldersDeleted is the folder service's call after a deletion:
		// docrepo's own services only.
		foldersDeleted = "/docrepo.document.v1.DocumentService/FoldersDeleted"
		undeclared     = "/docrepo.folder.v1.FolderService/NoSuchMethod"
		healthCheck    = "/grpc.health.v1.Health/Check"
		healthWatch    = "/grpc.health.v1.Health/Watch"
		reflect        = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
		reflectOld     = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
	)
	call := func(edge bool, tokens ...string) context.Context {
		md := metadata.MD{}
		for _, tok := range tokens {
			md.Append("authorization", "Bearer "+tok)
		}
		if edge {
			md.Set(EdgeMetadataKey, "rest")
		}
		return metadata.NewIncomingContext(context.Background(), md)
	}
	tests := []struct {
		name       string
		ctx        context.Context
		method     string
		wantCode   codes.Code
		wantDetail string
	}{
		{name: "declared scope held", ctx: call(false, reader), method: listFolders, wantCode: codes.OK},
		{name: "declared scope missing", ctx: call(false, searcher), method: listFolders, wantCode: codes.PermissionDenied, wantDetail: "Missing required scope: documents_read"},
		{name: "no rule, full scopes", ctx: call(false, reader), method: undeclared, wantCode: codes.PermissionDenied, wantDetail: "declares no access rule"},
		{name: "no rule, service credential", ctx: call(false, service), method: undeclared, wantCode: codes.PermissionDenied, wantDetail: "declares no access rule"},
		{name: "no token", ctx: call(false), method: listFolders, wantCode: codes.Unauthenticated, wantDetail: "Invalid or expired token"},
		{name: "unknown token", ctx: call(false, "drk_"+strings.Repeat("a", 43)), method: listFolders, wantCode: codes.Unauthenticated},
		{name: "malformed token", ctx: call(false, "not-a-token"), method: listFolders, wantCode: codes.Unauthenticated},
		{name: "two authorization values", ctx: call(false, reader, reader), method: listFolders, wantCode: codes.Unauthenticated},
		{name: "service credential without the route's scope", ctx: call(false, service), method: listFolders, wantCode: codes.PermissionDenied, wantDetail: "Missing required scope: documents_read"},
		{name: "service credential at the REST edge", ctx: call(true, service), method: listFolders, wantCode: codes.PermissionDenied, wantDetail: "Service credentials are not accepted"},
		{name: "folders deleted: the service credential", ctx: call(false, service), method: foldersDeleted, wantCode: codes.OK},
		{name: "folders deleted: a user's key with every user scope", ctx: call(false, reader), method: foldersDeleted, wantCode: codes.PermissionDenied, wantDetail: "Missing required scope: internal"},
		{name: "folders deleted: the service credential at the REST edge", ctx: call(true, service), method: foldersDeleted, wantCode: codes.PermissionDenied, wantDetail: "Service credentials are not accepted"},
		{name: "folders deleted: no token", ctx: call(false), method: foldersDeleted, wantCode: codes.Unauthenticated},
		{name: "health check needs nothing", ctx: call(false), method: healthCheck, wantCode: codes.OK},
		{name: "health watch needs a token", ctx: call(false), method: healthWatch, wantCode: codes.Unauthenticated},
		{name: "health watch needs no scope", ctx: call(false, searcher), method: healthWatch, wantCode: codes.OK},
		{name: "reflection needs a token", ctx: call(false), method: reflect, wantCode: codes.Unauthenticated},
		{name: "reflection refuses a user's key", ctx: call(false, reader), method: reflect, wantCode: codes.PermissionDenied, wantDetail: "service credentials only"},
		{name: "old reflection refuses a user's key", ctx: call(false, reader), method: reflectOld, wantCode: codes.PermissionDenied, wantDetail: "service credentials only"},
		{name: "reflection answers a service credential", ctx: call(false, service), method: reflect, wantCode: codes.OK},
		{name: "reflection refuses a service credential at the edge", ctx: call(true, service), method: reflect, wantCode: codes.PermissionDenied, wantDetail: "Service credentials are not accepted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, err := i.Authorize(tt.ctx, tt.method)
			if got := apierr.ToStatus(err).Code(); got != tt.wantCode {
				t.Fatalf("code %v (%v), want %v", got, err, tt.wantCode)
			}
			if err != nil {
				if !strings.Contains(apierr.ToStatus(err).Message(), tt.wantDetail) {
					t.Fatalf("detail %q, want it to contain %q", apierr.ToStatus(err).Message(), tt.wantDetail)
				}
				return
			}
			if tt.method != healthCheck {
				if _, ok := FromContext(ctx); !ok {
					t.Fatal("granted without a principal on the context")
				}
			}
		})
	}
}

// TestEdgeStripsServiceScopes: a REST call loses internal and admin even
// if its key held them, so it never sees past the groups.
func TestEdgeStripsServiceScopes(t *testing.T) {
	tok, _ := NewToken()
	i := NewInterceptor(keys{tok: {UserID: 1, Scopes: []string{ScopeDocumentsRead, ScopeInternal, ScopeAdmin}}})
	md := metadata.Pairs("authorization", "Bearer "+tok, EdgeMetadataKey, "rest")
	ctx, err := i.Authorize(metadata.NewIncomingContext(context.Background(), md), "/docrepo.folder.v1.FolderService/ListFolders")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := FromContext(ctx)
	if p.Unrestricted() || p.HasScope(ScopeAdmin) || !p.HasScope(ScopeDocumentsRead) {
		t.Fatalf("scopes at the edge: %v", p.Scopes)
	}
}
