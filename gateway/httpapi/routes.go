package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

// The route table of the OpenAPI document (openapi.go) is the one list of
// what the gateway serves: grpc-gateway's generated routes and the
// hand-written ones. The routing rules below read it, so they cannot drift
// from the document the end-to-end tests hold every response to:
//
//   - a 405 lists the methods of the path in Allow (RFC 9110 §15.5.6);
//   - query parameters an operation does not declare are a 400 (docs/api.md §7:
//     wrong field names), not silently ignored.

type routeTable struct {
	paths []routePath
	// query maps "METHOD /path/{param}" to the query parameters declared.
	query map[string]map[string]bool
}

type routePath struct {
	segments []string // "{...}" matches any non-empty segment
	methods  []string
}

var (
	routesOnce sync.Once
	routesVal  *routeTable
)

func routes() *routeTable {
	routesOnce.Do(func() {
		doc, err := OpenAPI()
		if err != nil {
			return
		}
		rt := &routeTable{query: map[string]map[string]bool{}}
		for _, path := range doc.Paths.InMatchingOrder() {
			item := doc.Paths.Value(path)
			rp := routePath{segments: strings.Split(strings.TrimPrefix(path, "/"), "/")}
			for method, op := range item.Operations() {
				rp.methods = append(rp.methods, method)
				q := map[string]bool{}
				for _, p := range op.Parameters {
					if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
						q[p.Value.Name] = true
					}
				}
				rt.query[method+" "+path] = q
			}
			rt.paths = append(rt.paths, rp)
		}
		routesVal = rt
	})
	return routesVal
}

// allowedMethods lists the methods served on path (HEAD wherever GET is),
// in the order an Allow header shows them; nil when the path is unknown.
func allowedMethods(path string) []string {
	rt := routes()
	if rt == nil {
		return nil
	}
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var out []string
	for _, rp := range rt.paths {
		if !segmentsMatch(rp.segments, segs) {
			continue
		}
		for _, m := range rp.methods {
			out = append(out, m)
			if m == http.MethodGet {
				out = append(out, http.MethodHead)
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func segmentsMatch(pattern, segs []string) bool {
	if len(pattern) != len(segs) {
		return false
	}
	for i, p := range pattern {
		if strings.HasPrefix(p, "{") {
			if segs[i] == "" {
				return false
			}
		} else if p != segs[i] {
			return false
		}
	}
	return true
}

// patternVar is a variable of a grpc-gateway pattern string ("{doc_id=*}").
var patternVar = regexp.MustCompile(`\{([^=}]+)=\*\}`)

// unknownQueryParam returns the first query parameter (in name order) that
// the operation of route (a grpc-gateway pattern string) does not declare.
func unknownQueryParam(method, route string, query url.Values) string {
	if len(query) == 0 {
		return ""
	}
	rt := routes()
	if rt == nil {
		return ""
	}
	declared, ok := rt.query[method+" "+patternVar.ReplaceAllString(route, "{$1}")]
	if !ok {
		return ""
	}
	names := make([]string, 0, len(query))
	for name := range query {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !declared[name] {
			return name
		}
	}
	return ""
}

// hasEmptySegment reports a path with a trailing or doubled slash: it
// names no resource, and grpc-gateway would otherwise match it against a
// route with an empty path parameter.
func hasEmptySegment(path string) bool {
	return len(path) > 1 && (strings.HasSuffix(path, "/") || strings.Contains(path, "//"))
}

// JSON request bodies are limited to maxJSONBody: a longer announced
// Content-Length is refused at once, a longer chunked body when the
// decoder reads past the limit; both are a 413.
const tooLargeDetail = "Request body too large"

type bodyLimitKey struct{}

// limitedBody fails reads past its limit and remembers that it did.
type limitedBody struct {
	io.ReadCloser
	left     int64
	exceeded bool
}

var errBodyTooLarge = errors.New(tooLargeDetail)

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		b.exceeded = true
		return 0, errBodyTooLarge
	}
	return n, err
}

// limitBody applies the JSON body limit to r.
func limitBody(r *http.Request) *http.Request {
	lb := &limitedBody{ReadCloser: r.Body, left: maxJSONBody}
	r = r.WithContext(context.WithValue(r.Context(), bodyLimitKey{}, lb))
	r.Body = lb
	return r
}

// bodyTooLarge reports whether the request's body went past its limit.
func bodyTooLarge(ctx context.Context) bool {
	lb, ok := ctx.Value(bodyLimitKey{}).(*limitedBody)
	return ok && lb.exceeded
}
