package auth

import (
	"context"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/docrepo/docrepo/pkg/apierr"
	apiv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/api/v1"
)

// Authenticator resolves a token to a principal. It returns an
// apierr.KindUnauthenticated error for unknown, expired or revoked tokens.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*Principal, error)
}

// ErrInvalidToken is the 401 every unusable token gets.
func ErrInvalidToken() error { return apierr.Unauthenticated("Invalid or expired token") }

// publicMethods need no token: the health checks of probes and load
// balancers (Kubernetes gRPC probes and docrepoctl health call Check).
var publicMethods = map[string]bool{"/grpc.health.v1.Health/Check": true, "/grpc.health.v1.Health/List": true}

// infrastructure is what every gRPC server exposes beside its API: a
// health Watch stream, which needs a valid token but no scope, and
// reflection, which describes the whole API (every method, every internal
// and admin RPC) and so answers service credentials only: operators'
// tools (grpcurl) and docrepo's own processes, never a user's API key.
var infrastructure = []struct {
	prefix      string
	serviceOnly bool
}{
	{prefix: "/grpc.health.v1.Health/"},
	{prefix: "/grpc.reflection.v1.ServerReflection/", serviceOnly: true},
	{prefix: "/grpc.reflection.v1alpha.ServerReflection/", serviceOnly: true},
}

// ErrReflectionForServices refuses reflection to a user's API key.
func ErrReflectionForServices() error {
	return apierr.PermissionDenied("gRPC reflection is for service credentials only")
}

// Interceptor enforces the access option of every RPC.
type Interceptor struct {
	authn Authenticator
	rules sync.Map // full method name -> *apiv1.Access (nil: none declared)
}

// NewInterceptor returns an interceptor authenticating with authn.
func NewInterceptor(authn Authenticator) *Interceptor {
	return &Interceptor{authn: authn}
}

// Rule returns the declared access rule of a full method name such as
// "/docrepo.folder.v1.FolderService/ListFolders", or nil.
func Rule(fullMethod string) *apiv1.Access {
	name := strings.TrimPrefix(fullMethod, "/")
	svc, method, ok := strings.Cut(name, "/")
	if !ok {
		return nil
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc + "." + method))
	if err != nil {
		return nil
	}
	md, ok := d.(protoreflect.MethodDescriptor)
	if !ok {
		return nil
	}
	access, _ := proto.GetExtension(md.Options(), apiv1.E_Access).(*apiv1.Access)
	return access
}

func (i *Interceptor) rule(fullMethod string) *apiv1.Access {
	if r, ok := i.rules.Load(fullMethod); ok {
		return r.(*apiv1.Access)
	}
	r := Rule(fullMethod)
	i.rules.Store(fullMethod, r)
	return r
}

// Authorize authenticates the call described by ctx and checks its scopes,
// returning ctx with the principal attached.
func (i *Interceptor) Authorize(ctx context.Context, fullMethod string) (context.Context, error) {
	if publicMethods[fullMethod] {
		return ctx, nil
	}
	for _, inf := range infrastructure {
		if strings.HasPrefix(fullMethod, inf.prefix) {
			pr, err := i.authenticate(ctx)
			if err != nil {
				return ctx, err
			}
			if inf.serviceOnly && pr.Service == "" {
				return ctx, ErrReflectionForServices()
			}
			return WithPrincipal(ctx, pr), nil
		}
	}
	rule := i.rule(fullMethod)
	if rule == nil {
		// Deny by default: an RPC must declare who may call it.
		return ctx, apierr.PermissionDenied("Method %s declares no access rule", fullMethod)
	}
	if rule.GetPublic() {
		return ctx, nil
	}
	p, err := i.authenticate(ctx)
	if err != nil {
		return ctx, err
	}
	scopes := rule.GetAnyScope()
	granted := len(scopes) == 0
	for _, s := range scopes {
		if p.HasScope(s) {
			granted = true
			break
		}
	}
	if !granted {
		return ctx, apierr.PermissionDenied("Missing required scope: %s", scopes[0])
	}
	return WithPrincipal(ctx, p), nil
}

// ErrServiceCredentialAtEdge refuses a service credential on a REST call.
func ErrServiceCredentialAtEdge() error {
	return apierr.PermissionDenied("Service credentials are not accepted by the REST API; use an API key")
}

// authenticate resolves the call's bearer token to its principal. A call
// that came in through the REST edge may not use a service credential, and
// loses the service scopes whatever it holds: internal (every document
// regardless of groups) and admin are for docrepo's own processes and
// operators over gRPC, never for a REST client. (API keys cannot hold
// them; stripping them too keeps the edge closed should one ever do.)
func (i *Interceptor) authenticate(ctx context.Context) (*Principal, error) {
	token, ok := tokenFromMetadata(ctx)
	if !ok || !WellFormed(token) {
		return nil, ErrInvalidToken()
	}
	p, err := i.authn.Authenticate(ctx, token)
	if err != nil || !FromEdge(ctx) {
		return p, err
	}
	if p.Service != "" {
		return nil, ErrServiceCredentialAtEdge()
	}
	q := *p
	q.Scopes = slices.DeleteFunc(slices.Clone(p.Scopes), func(s string) bool { return s == ScopeInternal || s == ScopeAdmin })
	return &q, nil
}

// EdgeMetadataKey marks a call made on behalf of a REST request: the
// gateway sets it, and services pass it on with the caller's credentials.
// It only ever takes power away, so a client that omits it gains nothing
// it would not have over gRPC directly.
const EdgeMetadataKey = "docrepo-edge"

// FromEdge reports whether the call came in through the REST edge.
func FromEdge(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	return len(md.Get(EdgeMetadataKey)) > 0
}

// tokenFromMetadata returns the bearer token of the call's one
// authorization value. A call with several is refused: which one counts
// would otherwise depend on where it is read (a rate limiter keyed on one
// and authentication on another could be played against each other).
func tokenFromMetadata(ctx context.Context) (string, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) != 1 {
		return "", false
	}
	return BearerToken(vals[0])
}

// Unary is the unary server interceptor.
func (i *Interceptor) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, err := i.Authorize(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// AcceptedHeader is the header metadata key a server sends at the start of
// a client-streaming call it has authenticated and authorised: a client
// that waits for it (the gateway's uploads) reads and buffers nothing for
// a call that would be refused.
const AcceptedHeader = "docrepo-accepted"

// Stream is the streaming server interceptor.
func (i *Interceptor) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, err := i.Authorize(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	if info.IsClientStream {
		if err := ss.SendHeader(metadata.Pairs(AcceptedHeader, "1")); err != nil {
			return err
		}
	}
	return handler(srv, &contextStream{ServerStream: ss, ctx: ctx})
}

type contextStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *contextStream) Context() context.Context { return s.ctx }
