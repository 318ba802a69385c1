package e2e

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/docrepo/docrepo/pkg/auth"
	_ "github.com/docrepo/docrepo/pkg/gen/docrepo/indexer/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
)

// serviceHost maps each docrepo gRPC service to the stack process serving
// it (IndexerService runs in the search process in embedded mode).
var serviceHost = map[string]string{
	"docrepo.document.v1.DocumentService":          "document",
	"docrepo.document.v1.DocumentLifecycleService": "document",
	"docrepo.folder.v1.FolderService":              "folder",
	"docrepo.search.v1.SearchService":              "search",
	"docrepo.schema.v1.SchemaService":              "schema",
	"docrepo.indexer.v1.IndexerService":            "search",
	"docrepo.audit.v1.AuditService":                "document",
	"docrepo.webhook.v1.WebhookService":            "document",
	// The folder service's part of the audit feed (the document service
	// serves its own too).
	"docrepo.audit.v1.AuditPartService": "folder",
}

// TestGRPCScopeMatrix calls every RPC of every docrepo service directly over
// gRPC, as an internal caller would: without a token (401) and with a key
// holding every scope except the ones the RPC accepts (403). It walks the
// registered descriptors, so a new RPC is covered the moment it exists.
func TestGRPCScopeMatrix(t *testing.T) {
	t.Parallel()
	u := newUser(t, []string{uniq("g")})
	var methods []protoreflect.MethodDescriptor
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "docrepo.") {
			return true
		}
		for i := 0; i < fd.Services().Len(); i++ {
			sd := fd.Services().Get(i)
			for j := 0; j < sd.Methods().Len(); j++ {
				methods = append(methods, sd.Methods().Get(j))
			}
		}
		return true
	})
	if len(methods) < 20 {
		t.Fatalf("found only %d docrepo RPCs: are the generated packages linked in?", len(methods))
	}
	conns := map[string]*grpc.ClientConn{}
	for svc, host := range serviceHost {
		conn, err := grpcclient.Dial(stk.addrs[host])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conns[svc] = conn
	}
	for _, md := range methods {
		svc := string(md.Parent().FullName())
		full := "/" + svc + "/" + string(md.Name())
		t.Run(full, func(t *testing.T) {
			conn, ok := conns[svc]
			if !ok {
				t.Fatalf("no stack process serves %s", svc)
			}
			rule := auth.Rule(full)
			if rule == nil || len(rule.GetAnyScope()) == 0 {
				t.Fatalf("%s declares no scopes", full)
			}
			var lacking []string
			for _, s := range auth.KnownScopes {
				accepted := false
				for _, a := range rule.GetAnyScope() {
					accepted = accepted || a == s
				}
				if !accepted {
					lacking = append(lacking, s)
				}
			}
			call := func(token string) error {
				ctx := context.Background()
				if token != "" {
					ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
				}
				return invokeEmpty(ctx, conn, full, md)
			}
			if code := status.Code(call("")); code != codes.Unauthenticated {
				t.Errorf("without a token: %v, want Unauthenticated", code)
			}
			// User scopes go on an API key, service scopes on a service
			// credential: each must be refused.
			var userScopes, serviceScopes []string
			for _, s := range lacking {
				if slices.Contains(auth.ServiceScopes, s) {
					serviceScopes = append(serviceScopes, s)
				} else {
					userScopes = append(userScopes, s)
				}
			}
			for _, caller := range []struct {
				what   string
				scopes []string
				token  func() string
			}{
				{what: "API key", scopes: userScopes, token: func() string { return u.withKey(userScopes...).token }},
				{what: "service credential", scopes: serviceScopes, token: func() string { return newService(t, serviceScopes...).token }},
			} {
				if len(caller.scopes) == 0 {
					continue
				}
				st := status.Convert(call(caller.token()))
				if st.Code() != codes.PermissionDenied || st.Message() != "Missing required scope: "+rule.GetAnyScope()[0] {
					t.Errorf("%s with %v: %v %q, want PermissionDenied naming %s", caller.what, caller.scopes, st.Code(), st.Message(), rule.GetAnyScope()[0])
				}
			}
		})
	}
}

// invokeEmpty calls a method with an empty request of its input type,
// whatever its streaming shape, and returns the call's final error.
func invokeEmpty(ctx context.Context, conn *grpc.ClientConn, full string, md protoreflect.MethodDescriptor) error {
	req := dynamicpb.NewMessage(md.Input())
	resp := dynamicpb.NewMessage(md.Output())
	if !md.IsStreamingClient() && !md.IsStreamingServer() {
		return conn.Invoke(ctx, full, req, resp)
	}
	desc := &grpc.StreamDesc{StreamName: string(md.Name()), ClientStreams: md.IsStreamingClient(), ServerStreams: md.IsStreamingServer()}
	stream, err := conn.NewStream(ctx, desc, full)
	if err != nil {
		return err
	}
	if err := stream.SendMsg(req); err != nil && err != io.EOF {
		return err
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	for {
		if err := stream.RecvMsg(resp); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}
