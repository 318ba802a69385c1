package httpapi

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/config"
	auditv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/audit/v1"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	schemav1 "github.com/docrepo/docrepo/pkg/gen/docrepo/schema/v1"
	searchv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/search/v1"
	webhookv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/webhook/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/grpctls"
	"github.com/docrepo/docrepo/pkg/logging"
	"github.com/docrepo/docrepo/pkg/metrics"
	"github.com/docrepo/docrepo/pkg/profiling"
	"github.com/docrepo/docrepo/pkg/tracing"
)

// Config is the gateway's configuration.
type Config struct {
	HTTPAddr       string
	DocumentAddr   string
	FolderAddr     string
	SearchAddr     string
	SchemaAddr     string
	MaxUploadBytes int64
	// RequestTimeout bounds each forwarded unary call (0: none).
	RequestTimeout time.Duration
	// StallTimeout cuts a connection whose request body or response moves
	// no byte for this long (0: DefaultStallTimeout; negative: never).
	StallTimeout time.Duration
	LogLevel     string
	LogFormat    string
	// RateLimit is the sustained requests per second allowed per API key
	// (0: no limit); RateBurst the burst above it.
	RateLimit float64
	RateBurst int
	// AuthFailureRate is the sustained failed authentications per second
	// allowed per client address, AuthFailureBurst the burst above it
	// (authGate); 0 takes the defaults.
	AuthFailureRate  float64
	AuthFailureBurst int
	// MaxStreams bounds the uploads and downloads in progress at once
	// (0: DefaultMaxStreams); more are answered 503.
	MaxStreams int
	// PprofAddr, when set, serves Go's runtime profiles (pkg/profiling)
	// on an address of its own, never on the REST port.
	PprofAddr string
	// AdminAddr, when set, is the admin listener: /metrics, /readyz with
	// each backend's state, /healthz (AdminHandler). The REST port keeps
	// /healthz and a /readyz that only says ok or unavailable.
	AdminAddr string
	// GRPCTLS is how the gateway dials the services (pkg/grpctls).
	GRPCTLS grpctls.Config
	// Tracing is the export of OpenTelemetry traces (pkg/tracing).
	Tracing config.Tracing

	// Listener, when set, replaces listening on HTTPAddr (tests);
	// AdminListener on AdminAddr.
	Listener      net.Listener
	AdminListener net.Listener
	// Logger, when set, replaces the configured logger (tests).
	Logger *slog.Logger
}

// Register adds the gateway's settings to l.
func (c *Config) Register(l *config.Loader) {
	l.RegisterGatewayAddr(&c.HTTPAddr)
	l.ServiceAddr(&c.DocumentAddr, "document")
	l.ServiceAddr(&c.FolderAddr, "folder")
	l.ServiceAddr(&c.SearchAddr, "search")
	l.ServiceAddr(&c.SchemaAddr, "schema")
	l.RegisterMaxUploadBytes(&c.MaxUploadBytes)
	l.Duration(&c.RequestTimeout, "request-timeout", "DOCREPO_REQUEST_TIMEOUT", 60*time.Second, "deadline of each forwarded unary call")
	l.Duration(&c.StallTimeout, "stall-timeout", "DOCREPO_HTTP_STALL_TIMEOUT", DefaultStallTimeout, "a request body or response that moves no byte for this long is cut (long transfers that keep moving are fine)")
	l.Float64(&c.RateLimit, "rate-limit", "DOCREPO_RATE_LIMIT", 0, "requests per second per API key (0: unlimited)")
	l.Int(&c.RateBurst, "rate-burst", "DOCREPO_RATE_BURST", 0, "burst allowed above the rate (default: the rate, at least 1)")
	l.Float64(&c.AuthFailureRate, "auth-failure-rate", "DOCREPO_AUTH_FAILURE_RATE", DefaultAuthFailureRate, "failed authentications per second allowed per client address (more are answered 429 before any work, except for tokens a service accepted recently)")
	l.Int(&c.AuthFailureBurst, "auth-failure-burst", "DOCREPO_AUTH_FAILURE_BURST", DefaultAuthFailureBurst, "burst of failed authentications allowed per client address above the rate")
	l.Int(&c.MaxStreams, "max-streams", "DOCREPO_MAX_STREAMS", DefaultMaxStreams, "uploads and downloads in progress at once (more are answered 503 with Retry-After)")
	l.RegisterLogging(&c.LogLevel, &c.LogFormat)
	l.RegisterPprof(&c.PprofAddr)
	l.String(&c.AdminAddr, "admin-addr", "DOCREPO_GATEWAY_ADMIN_ADDR", DefaultAdminAddr, "the gateway's admin listener: /metrics, /readyz with each service's state, /healthz (empty: off); keep it off the public network (the REST port serves only /healthz and a bare /readyz)")
	l.RegisterGRPCTLS(&c.GRPCTLS)
	l.RegisterTracing(&c.Tracing)
}

// DefaultAdminAddr is the gateway's default admin listener: beside the
// services' metrics ports (9111…9115), on loopback.
const DefaultAdminAddr = "127.0.0.1:9116"

// Defaults of the pre-authentication limits (Config).
const (
	DefaultAuthFailureRate  = 1.0
	DefaultAuthFailureBurst = 20
	DefaultMaxStreams       = 64
)

// backend is one service connection.
type backend struct {
	name string
	conn *grpc.ClientConn
}

// Gateway is the REST edge.
type Gateway struct {
	cfg      Config
	log      *slog.Logger
	backends []backend
	mux      *runtime.ServeMux
	docs     documentv1.DocumentServiceClient
	handler  http.Handler
	gate     *authGate
	// streams holds a slot per upload or download in progress.
	streams chan struct{}
	// metrics is the registry /metrics serves.
	metrics *prometheus.Registry
}

var (
	httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_http_requests_total",
		Help: "REST requests, by route and status.",
	}, []string{"method", "route", "status"})
	httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "docrepo_http_request_duration_seconds",
		Help:    "REST request latency, by route.",
		Buckets: metrics.LatencyBuckets,
	}, []string{"method", "route"})
)

// New dials every service (lazily) and builds the HTTP handler.
func New(ctx context.Context, cfg Config) (*Gateway, error) {
	g := &Gateway{cfg: cfg, log: cfg.Logger, metrics: metrics.NewRegistry()}
	if err := RegisterMetrics(g.metrics); err != nil {
		return nil, err
	}
	rate, burst := cfg.AuthFailureRate, cfg.AuthFailureBurst
	if rate <= 0 {
		rate = DefaultAuthFailureRate
	}
	if burst <= 0 {
		burst = DefaultAuthFailureBurst
	}
	g.gate = newAuthGate(rate, burst)
	maxStreams := cfg.MaxStreams
	if maxStreams <= 0 {
		maxStreams = DefaultMaxStreams
	}
	g.streams = make(chan struct{}, maxStreams)
	if g.log == nil {
		g.log = logging.New("gateway", cfg.LogLevel, cfg.LogFormat)
	}
	g.mux = runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, Marshaler{}),
		runtime.WithErrorHandler(errorHandler),
		runtime.WithRoutingErrorHandler(routingErrorHandler),
		runtime.WithMetadata(func(ctx context.Context, r *http.Request) metadata.MD {
			return metadata.Pairs(logging.RequestIDHeader, logging.RequestID(r.Context()), auth.EdgeMetadataKey, "rest")
		}),
		runtime.WithIncomingHeaderMatcher(func(key string) (string, bool) {
			// Authorization is forwarded by grpc-gateway itself; nothing
			// else from the client becomes metadata.
			return "", false
		}),
		runtime.WithOutgoingHeaderMatcher(func(key string) (string, bool) {
			// One backend header reaches the client: the search service's
			// notice that the index is being re-embedded and which
			// embedder's vectors ranked the search (docs/api.md §4.8).
			if key == "docrepo-reembedding" {
				return "Docrepo-Reembedding", true
			}
			return "", false
		}),
		runtime.WithMiddlewares(g.routeMetrics),
	)
	type registerFunc func(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error
	type registration struct {
		name     string
		addr     string
		register []registerFunc
	}
	regs := []registration{
		// The document service also serves the trash and bulk
		// operations, the audit trail and the webhook subscriptions
		// (docs/design.md §9).
		{"document", cfg.DocumentAddr, []registerFunc{documentv1.RegisterDocumentServiceHandler,
			documentv1.RegisterDocumentLifecycleServiceHandler, auditv1.RegisterAuditServiceHandler,
			webhookv1.RegisterWebhookServiceHandler}},
		{"folder", cfg.FolderAddr, []registerFunc{folderv1.RegisterFolderServiceHandler}},
		{"search", cfg.SearchAddr, []registerFunc{searchv1.RegisterSearchServiceHandler}},
		{"schema", cfg.SchemaAddr, []registerFunc{schemav1.RegisterSchemaServiceHandler}},
	}
	var dialOpts []grpcclient.Option
	creds, err := cfg.GRPCTLS.Client()
	if err != nil {
		return nil, err
	}
	if creds != nil {
		dialOpts = append(dialOpts, grpcclient.WithDialOptions(grpc.WithTransportCredentials(creds)))
	}
	for _, reg := range regs {
		conn, err := grpcclient.Dial(reg.addr, dialOpts...)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.backends = append(g.backends, backend{name: reg.name, conn: conn})
		for _, register := range reg.register {
			if err := register(ctx, g.mux, conn); err != nil {
				g.Close()
				return nil, fmt.Errorf("register %s: %w", reg.name, err)
			}
		}
		if reg.name == "document" {
			g.docs = documentv1.NewDocumentServiceClient(conn)
		}
	}
	routes := []struct {
		method, pattern string
		h               runtime.HandlerFunc
	}{
		{http.MethodPost, "/apiv2/pub/documents/upload", g.upload},
		{http.MethodGet, "/apiv2/pub/documents/{doc_id}/download", g.download},
		{http.MethodHead, "/apiv2/pub/documents/{doc_id}/download", g.download},
		{http.MethodPost, "/apiv3/pub/documents/{doc_id}/versions", g.uploadVersion},
		{http.MethodGet, "/healthz", g.healthz},
		{http.MethodGet, "/readyz", g.publicReadyz},
		{http.MethodGet, "/openapi.json", g.openapi},
	}
	for _, rt := range routes {
		if err := g.mux.HandlePath(rt.method, rt.pattern, rt.h); err != nil {
			g.Close()
			return nil, fmt.Errorf("route %s %s: %w", rt.method, rt.pattern, err)
		}
	}
	// The trace span wraps everything, so the access log and every call to
	// a service carry its trace id.
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hasEmptySegment(r.URL.Path) {
			writeDetail(w, http.StatusNotFound, "Not Found")
			return
		}
		g.mux.ServeHTTP(w, r)
	})
	if cfg.RateLimit > 0 {
		h = newRateLimiter(cfg.RateLimit, cfg.RateBurst).middleware(h)
	}
	h = oneAuthorization(h)
	g.handler = otelhttp.NewHandler(g.middleware(h), "gateway",
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }))
	return g, nil
}

// oneAuthorization refuses a request with more than one Authorization
// header (400): every part of the gateway and the services must see the
// same credentials, or one could be played against another (a rate limit
// keyed on the first header, authentication on the first Bearer one).
func oneAuthorization(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header.Values("Authorization")) > 1 {
			writeDetail(w, http.StatusBadRequest, "Only one Authorization header is allowed")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Handler is the complete HTTP handler.
func (g *Gateway) Handler() http.Handler { return g.handler }

// AdminHandler is the admin listener's handler: /metrics (Prometheus),
// /readyz with each backend's gRPC health, /healthz. It needs no token,
// so it belongs on an address only operators and the metrics scraper
// reach (Config.AdminAddr), never the REST port: the metrics name every
// route's traffic and errors, and /readyz which backend is down.
func (g *Gateway) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g.metrics, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { g.healthz(w, r, nil) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { g.readyz(w, r, nil) })
	return mux
}

// Close closes every backend connection.
func (g *Gateway) Close() {
	for _, b := range g.backends {
		_ = b.conn.Close()
	}
}

// Run serves HTTP until ctx is done, then shuts down gracefully: in-flight
// requests (uploads included) get up to 30 s to finish.
func Run(ctx context.Context, cfg Config) error {
	stopTracing, err := tracing.Setup(ctx, "gateway", tracing.Options(cfg.Tracing))
	if err != nil {
		return err
	}
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stopTracing(flushCtx)
	}()
	g, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	defer g.Close()
	lis := cfg.Listener
	if lis == nil {
		if lis, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			return fmt.Errorf("gateway: listen %s: %w", cfg.HTTPAddr, err)
		}
	}
	stall := cfg.StallTimeout
	if stall == 0 {
		stall = DefaultStallTimeout
	}
	hs := &http.Server{Handler: stallDeadlines(g.Handler(), stall), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(lis) }()
	g.log.Info("gateway listening", "addr", lis.Addr().String())
	adminLis := cfg.AdminListener
	if adminLis == nil && cfg.AdminAddr != "" {
		if adminLis, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
			_ = hs.Close()
			return fmt.Errorf("gateway: listen %s (admin): %w", cfg.AdminAddr, err)
		}
	}
	if adminLis != nil {
		admin := &http.Server{Handler: g.AdminHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
		go func() { _ = admin.Serve(adminLis) }()
		defer admin.Close()
		g.log.Info("gateway admin listener (/metrics, /readyz, /healthz)", "addr", adminLis.Addr().String())
	}
	if cfg.PprofAddr != "" {
		pctx, stopProfiling := context.WithCancel(ctx)
		defer stopProfiling()
		go func() { _ = profiling.Serve(pctx, cfg.PprofAddr, g.log) }()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// statusWriter records the status code for logs and metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
	route  string
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// middleware adds request ids, access logs, metrics, panic recovery and the
// per-call deadline.
func (g *Gateway) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !logging.ValidRequestID(id) {
			id = logging.NewRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		if tid := tracing.TraceID(r.Context()); tid != "" {
			w.Header().Set("X-Trace-Id", tid)
		}
		ctx := logging.WithRequestID(r.Context(), id)
		ctx = logging.WithLogger(ctx, g.log)
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			rec := recover()
			if rec == http.ErrAbortHandler { //nolint:errorlint // sentinel compared by identity, as net/http does
				defer panic(rec)
			} else if rec != nil {
				g.log.ErrorContext(ctx, "panic in gateway", "panic", fmt.Sprint(rec))
				if sw.status == 0 {
					writeDetail(sw, http.StatusInternalServerError, "Internal server error")
				}
			}
			route := sw.route
			if route == "" {
				route = "unmatched"
			}
			elapsed := time.Since(start)
			method := metricMethod(r.Method)
			httpRequests.WithLabelValues(method, route, fmt.Sprint(sw.status)).Inc()
			httpDuration.WithLabelValues(method, route).Observe(elapsed.Seconds())
			if !strings.HasPrefix(r.URL.Path, "/healthz") {
				g.log.InfoContext(ctx, "http", "method", r.Method, "path", r.URL.Path, "route", route,
					"status", sw.status, "duration_ms", float64(elapsed.Microseconds())/1000)
			}
		}()
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// metricMethod bounds the method label: clients may send any token as a
// method, and each must not become a new time series.
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// routeMetrics records the matched route pattern for metrics and logs,
// refuses query parameters the route does not declare, and applies the
// JSON body limit and the per-call deadline to unary routes.
func (g *Gateway) routeMetrics(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		route := ""
		if pat, ok := runtime.HTTPPattern(r.Context()); ok {
			route = pat.String()
			if sw, ok := w.(*statusWriter); ok {
				sw.route = route
			}
		}
		// Nothing is read or called for a request the gate refuses.
		if !publicRoute(route) {
			done, ok := g.gate.admit(w, r)
			if !ok {
				return
			}
			defer func() {
				status := http.StatusOK
				if sw, ok := w.(*statusWriter); ok && sw.status != 0 {
					status = sw.status
				}
				done(status)
			}()
		}
		query := r.URL.Query()
		if name := unknownQueryParam(r.Method, route, query); name != "" {
			writeDetail(w, http.StatusBadRequest, "Unknown query parameter: "+name)
			return
		}
		if name := notUTF8Param(params, query); name != "" {
			writeDetail(w, http.StatusBadRequest, notUTF8Detail(name))
			return
		}
		if !streamingRoute(r.Method, route) {
			if r.ContentLength > maxJSONBody {
				writeDetail(w, http.StatusRequestEntityTooLarge, tooLargeDetail)
				return
			}
			r = limitBody(r)
			if g.cfg.RequestTimeout > 0 {
				ctx, cancel := context.WithTimeout(r.Context(), g.cfg.RequestTimeout)
				defer cancel()
				r = r.WithContext(ctx)
			}
		}
		next(w, r, params)
	}
}

// notUTF8Param returns the first path or query parameter (path first, each
// in name order) whose value is not UTF-8 text: protobuf strings must be,
// so such a value would fail to encode for the backend call.
func notUTF8Param(params map[string]string, query url.Values) string {
	for _, name := range slices.Sorted(maps.Keys(params)) {
		if !utf8.ValidString(params[name]) {
			return name
		}
	}
	for _, name := range slices.Sorted(maps.Keys(query)) {
		for _, v := range query[name] {
			if !utf8.ValidString(v) {
				return name
			}
		}
	}
	return ""
}

// notUTF8Detail is the 400 detail for a value that is not UTF-8 text.
func notUTF8Detail(name string) string {
	return "Invalid value for " + name + ": not valid UTF-8 text"
}

// streamingRoute reports whether a route moves file bytes: those run as
// long as the transfer needs, bounded by the client's connection.
func streamingRoute(method, route string) bool {
	return strings.HasSuffix(route, "/upload") || strings.HasSuffix(route, "/download") ||
		(method == http.MethodPost && strings.HasSuffix(route, "/versions"))
}

func (g *Gateway) healthz(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}`))
}

// readyz is ready when every backend answers its gRPC health check, and
// says each one's state (the admin listener's).
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	ready, out := g.ready(r.Context())
	code := http.StatusOK
	status := "ok"
	if !ready {
		code = http.StatusServiceUnavailable
		status = "unavailable"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, _ := Marshaler{}.Marshal(map[string]any{"status": status, "services": out})
	_, _ = w.Write(b)
}

// publicReadyz is the REST port's readiness: the same check, answered
// only as ok (200) or unavailable (503), for load balancers; which
// service is down is for the admin listener.
func (g *Gateway) publicReadyz(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	ready, _ := g.ready(r.Context())
	w.Header().Set("Content-Type", "application/json")
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"unavailable"}`))
		return
	}
	_, _ = w.Write([]byte(`{"status":"ok"}`))
}

// ready asks every backend's gRPC health check.
func (g *Gateway) ready(ctx context.Context) (bool, map[string]string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out := map[string]string{}
	ready := true
	for _, b := range g.backends {
		resp, err := healthpb.NewHealthClient(b.conn).Check(ctx, &healthpb.HealthCheckRequest{})
		switch {
		case err != nil:
			out[b.name] = "unavailable"
			ready = false
		case resp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
			out[b.name] = strings.ToLower(resp.GetStatus().String())
			ready = false
		default:
			out[b.name] = "ok"
		}
	}
	return ready, out
}

//go:embed openapi/docrepo.swagger.json
var openapiDoc []byte

// openapi serves the OpenAPI 3 document built from it (openapi.go).
func (g *Gateway) openapi(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	serveOpenAPI(w, r)
}

// RegisterMetrics registers the httpapi metrics on reg (pkg/metrics).
func RegisterMetrics(reg prometheus.Registerer) error {
	return metrics.Register(reg,
		httpRequests,
		httpDuration,
	)
}
