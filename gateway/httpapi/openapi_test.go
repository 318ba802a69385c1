package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"sigs.k8s.io/yaml"

	"github.com/docrepo/docrepo/pkg/logging"
)

// httpRules reads proto/http.yaml: "METHOD /path" of every rule.
func httpRules(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "proto", "http.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		HTTP struct {
			Rules []map[string]string `json:"rules"`
		} `json:"http"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range cfg.HTTP.Rules {
		for _, m := range []string{"get", "put", "post", "patch", "delete"} {
			if p, ok := r[m]; ok {
				out = append(out, strings.ToUpper(m)+" "+p)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("proto/http.yaml has no rules")
	}
	return out
}

// handWrittenRoutes are the routes New registers with HandlePath.
var handWrittenRoutes = []string{
	"POST /apiv2/pub/documents/upload",
	"GET /apiv2/pub/documents/{doc_id}/download",
	"HEAD /apiv2/pub/documents/{doc_id}/download",
	"POST /apiv3/pub/documents/{doc_id}/versions",
	"GET /healthz", "GET /readyz", "GET /openapi.json",
}

func documented(doc *openapi3.T) []string {
	var out []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			out = append(out, method+" "+path)
		}
	}
	slices.Sort(out)
	return out
}

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	doc, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("invalid document: %v", err)
	}
	want := append(httpRules(t), handWrittenRoutes...)
	got := documented(doc)
	for _, r := range want {
		if !slices.Contains(got, r) {
			t.Errorf("route %s is not documented", r)
		}
	}
	for _, r := range got {
		if !slices.Contains(want, r) {
			t.Errorf("%s is documented but is no route", r)
		}
	}
}

// TestOpenAPIRoutesAreServed sends a request to every documented route of
// a real gateway (its services unreachable): none may be a routing error,
// so the document names no route the gateway does not serve.
func TestOpenAPIRoutesAreServed(t *testing.T) {
	doc, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.Addr().String()
	dead.Close()
	g, err := New(context.Background(), Config{DocumentAddr: addr, FolderAddr: addr, SearchAddr: addr, SchemaAddr: addr,
		RequestTimeout: 2 * time.Second, Logger: logging.NewTo(io.Discard, "gateway", "info", "json")})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	param := regexp.MustCompile(`\{[a-z_]+\}`)
	for _, route := range documented(doc) {
		method, path, _ := strings.Cut(route, " ")
		req := httptest.NewRequest(method, param.ReplaceAllString(path, "1"), strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer x")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		g.Handler().ServeHTTP(rec, req)
		var body struct{ Detail string }
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if (rec.Code == http.StatusNotFound && body.Detail == "Not Found") || rec.Code == http.StatusMethodNotAllowed {
			t.Errorf("%s: %d %s: the gateway does not serve this documented route", route, rec.Code, rec.Body)
		}
	}
}

func schemaOf(t *testing.T, doc *openapi3.T, name string) *openapi3.Schema {
	t.Helper()
	ref := doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		t.Fatalf("no schema %s", name)
	}
	return ref.Value
}

func TestOpenAPIShapes(t *testing.T) {
	doc, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	op := func(method, path string) *openapi3.Operation {
		t.Helper()
		item := doc.Paths.Value(path)
		if item == nil || item.GetOperation(method) == nil {
			t.Fatalf("no %s %s", method, path)
		}
		return item.GetOperation(method)
	}
	body200 := func(method, path string) *openapi3.SchemaRef {
		t.Helper()
		mt := op(method, path).Responses.Status(200).Value.Content.Get("application/json")
		if mt == nil || mt.Schema == nil {
			t.Fatalf("%s %s: no JSON 200 body", method, path)
		}
		return mt.Schema
	}
	t.Run("bare arrays", func(t *testing.T) {
		tests := []struct {
			method, path, items string
		}{
			{method: "GET", path: "/apiv2/pub/folders", items: "#/components/schemas/v1Folder"},
			{method: "GET", path: "/apiv2/pub/schema/fields", items: "#/components/schemas/v1FieldDefinition"},
			{method: "GET", path: "/apiv2/pub/schema/values/{field_name}", items: "string"},
		}
		for _, tt := range tests {
			s := body200(tt.method, tt.path).Value
			if !s.Type.Is(openapi3.TypeArray) || s.Items == nil {
				t.Fatalf("%s %s: 200 is not an array", tt.method, tt.path)
			}
			if got := s.Items.Ref; got != tt.items && !(tt.items == "string" && s.Items.Value.Type.Is(openapi3.TypeString)) {
				t.Errorf("%s %s: items %q, want %s", tt.method, tt.path, got, tt.items)
			}
		}
	})
	t.Run("document fields", func(t *testing.T) {
		d := schemaOf(t, doc, "v1Document")
		tests := []struct {
			field    string
			typ      string
			format   string
			nullable bool
			required bool
		}{
			{field: "id", typ: "integer", format: "int64", required: true},
			{field: "description", typ: "string", required: true},
			{field: "doc_number", typ: "string", nullable: true, required: true},
			{field: "date", typ: "string", format: "date-time", nullable: true, required: true},
			{field: "privileged", typ: "boolean", required: true},
			{field: "linked_files", typ: "array", required: true},
			{field: "version_history", typ: "array"},
			{field: "folders", typ: "array"},
		}
		for _, tt := range tests {
			p := d.Properties[tt.field]
			if p == nil {
				t.Fatalf("v1Document has no %s", tt.field)
			}
			v := p.Value
			if len(v.AllOf) == 1 {
				v = v.AllOf[0].Value
			}
			if !v.Type.Is(tt.typ) || v.Format != tt.format {
				t.Errorf("%s: %v %q, want %s %q", tt.field, v.Type, v.Format, tt.typ, tt.format)
			}
			if p.Value.Nullable != tt.nullable {
				t.Errorf("%s: nullable %v, want %v", tt.field, p.Value.Nullable, tt.nullable)
			}
			if slices.Contains(d.Required, tt.field) != tt.required {
				t.Errorf("%s: required %v, want %v", tt.field, !tt.required, tt.required)
			}
		}
		if d.AdditionalProperties.Has == nil || *d.AdditionalProperties.Has {
			t.Error("v1Document allows properties it does not list")
		}
		lf := schemaOf(t, doc, "v1LinkedFile")
		if s := lf.Properties["image_size"].Value; !s.Type.Is("integer") {
			t.Errorf("image_size is %v, want an integer (int64 as a JSON number)", s.Type)
		}
	})
	t.Run("upload form", func(t *testing.T) {
		mt := op("POST", "/apiv2/pub/documents/upload").RequestBody.Value.Content.Get("multipart/form-data")
		s := mt.Schema.Value
		for _, f := range []string{"file", "folder_id", "description", "doc_type", "doc_status", "account_number", "reference_number",
			"date", "from_entity", "to_entity", "rev_number", "privileged", "doc_number_prefix"} {
			if s.Properties[f] == nil {
				t.Errorf("the upload form lacks %s (docs/api.md §4.1)", f)
			}
		}
		if !slices.Equal(s.Required, []string{"file", "folder_id"}) {
			t.Errorf("required %v", s.Required)
		}
		if ml := s.Properties["description"].Value.MaxLength; ml == nil || *ml != 400 {
			t.Error("description: maxLength 400")
		}
		if !s.Properties["folder_id"].Value.Type.Is("integer") || !s.Properties["privileged"].Value.Type.Is("boolean") {
			t.Error("folder_id is an integer, privileged a boolean")
		}
	})
	t.Run("download", func(t *testing.T) {
		o := op("GET", "/apiv2/pub/documents/{doc_id}/download")
		for _, st := range []int{200, 206, 304, 404, 416} {
			if o.Responses.Status(st) == nil {
				t.Errorf("download: no %d", st)
			}
		}
		r206 := o.Responses.Status(206).Value
		if r206.Headers["Content-Range"] == nil || r206.Headers["ETag"] == nil {
			t.Error("206 without Content-Range or ETag")
		}
		if mt := r206.Content.Get("application/pdf"); mt == nil || mt.Schema.Value.Format != "binary" {
			t.Error("download bodies are binary of any type")
		}
	})
	t.Run("errors and security", func(t *testing.T) {
		for path, item := range doc.Paths.Map() {
			for method, o := range item.Operations() {
				public := o.Security != nil && len(*o.Security) == 0
				if public != slices.Contains([]string{"/healthz", "/readyz", "/openapi.json"}, path) {
					t.Errorf("%s %s: public = %v", method, path, public)
				}
				for code, r := range o.Responses.Map() {
					n, _ := strconv.Atoi(code)
					if n < 400 || path == "/readyz" {
						continue
					}
					mt := r.Value.Content.Get("application/json")
					if mt == nil || mt.Schema.Ref != "#/components/schemas/Error" {
						t.Errorf("%s %s %s: not a {\"detail\"} body", method, path, code)
					}
				}
				if !public && (o.Responses.Status(401) == nil || o.Responses.Status(500) == nil) {
					t.Errorf("%s %s: 401 and 500 undocumented", method, path)
				}
				if o.Responses.Default() != nil {
					t.Errorf("%s %s: a default response hides which statuses are possible", method, path)
				}
			}
		}
		if doc.Components.SecuritySchemes["bearerAuth"].Value.Scheme != "bearer" {
			t.Error("no bearer scheme")
		}
	})
}

// populate sets every field of m (nested messages to depth), so that the
// Marshaler writes every property.
func populate(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if oo := fd.ContainingOneof(); oo != nil && !oo.IsSynthetic() && oo.Fields().Get(0) != fd {
			continue
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			if v, ok := sample(m, fd, depth); ok {
				l.Append(v)
			}
		case fd.IsMap():
			// docrepo's public messages have no maps.
		default:
			if v, ok := sample(m, fd, depth); ok {
				m.Set(fd, v)
			}
		}
	}
}

func sample(m protoreflect.Message, fd protoreflect.FieldDescriptor, depth int) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true), true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(7), true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(1 << 40), true
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("x"), true
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte("x")), true
	case protoreflect.MessageKind:
		switch fd.Message().FullName() {
		case "google.protobuf.Timestamp":
			return protoreflect.ValueOfMessage(timestamppb.New(time.Unix(1700000000, 5)).ProtoReflect()), true
		case "google.protobuf.Struct":
			s, _ := structpb.NewStruct(map[string]any{"id": 1, "k": "v", "n": nil})
			return protoreflect.ValueOfMessage(s.ProtoReflect()), true
		}
		if depth == 0 {
			return protoreflect.Value{}, false
		}
		var child protoreflect.Message
		if fd.IsList() {
			child = m.Mutable(fd).List().NewElement().Message()
		} else {
			child = m.NewField(fd).Message()
		}
		populate(child, depth-1)
		return protoreflect.ValueOfMessage(child), true
	}
	return protoreflect.Value{}, false
}

// TestOpenAPISchemasMatchTheMarshaler writes every response message the
// document names with the gateway's Marshaler, empty and fully set, and
// validates the JSON against its schema; and checks that the validation
// catches what would be a lie.
func TestOpenAPISchemasMatchTheMarshaler(t *testing.T) {
	b, err := build(openapiDoc)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for name, c := range b.components {
		if c.mode != response {
			continue
		}
		schema := b.doc.Components.Schemas[name].Value
		for _, variant := range []string{"empty", "full"} {
			m := dynamicpb.NewMessage(c.message)
			if variant == "full" {
				populate(m, 3)
			}
			data, err := Marshaler{}.Marshal(m)
			if err != nil {
				t.Fatalf("%s: marshal: %v", name, err)
			}
			var v any
			if err := json.Unmarshal(data, &v); err != nil {
				t.Fatal(err)
			}
			if err := schema.VisitJSON(v, openapi3.VisitAsResponse()); err != nil {
				t.Errorf("%s (%s): the Marshaler writes %s, which its schema refuses: %v", name, variant, data, err)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("only %d messages checked", checked)
	}

	// The same validation refuses the lies it is there to catch.
	doc := schemaOf(t, b.doc, "v1LinkedFile")
	good := map[string]any{"ownid": 1.0, "id": 2.0, "image_name": "a", "image_type": "b", "image_size": 3.0, "page_count": nil,
		"origname": "c", "filehash": "d", "lastmodified": "2024-01-02T03:04:05Z", "lastmodifieduser": 4.0, "pdf_image_name": nil}
	if err := doc.VisitJSON(good, openapi3.VisitAsResponse()); err != nil {
		t.Fatalf("a valid linked file is refused: %v", err)
	}
	lies := []struct {
		name   string
		mutate func(map[string]any)
	}{
		{name: "int64 as a string", mutate: func(m map[string]any) { m["image_size"] = "3" }},
		{name: "missing field", mutate: func(m map[string]any) { delete(m, "filehash") }},
		{name: "unknown field", mutate: func(m map[string]any) { m["imageSize"] = 3.0 }},
		{name: "null where never null", mutate: func(m map[string]any) { m["origname"] = nil }},
		{name: "not a date-time", mutate: func(m map[string]any) { m["lastmodified"] = "yesterday" }},
	}
	for _, l := range lies {
		m := map[string]any{}
		for k, v := range good {
			m[k] = v
		}
		l.mutate(m)
		if err := doc.VisitJSON(m, openapi3.VisitAsResponse()); err == nil {
			t.Errorf("%s: accepted", l.name)
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	g, err := New(context.Background(), Config{DocumentAddr: "127.0.0.1:1", FolderAddr: "127.0.0.1:1", SearchAddr: "127.0.0.1:1", SchemaAddr: "127.0.0.1:1",
		Logger: logging.NewTo(io.Discard, "gateway", "info", "json")})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	rec := httptest.NewRecorder()
	g.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("GET /openapi.json: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	loaded, err := openapi3.NewLoader().LoadFromData(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := loaded.Validate(context.Background()); err != nil {
		t.Fatalf("the served document does not validate: %v", err)
	}
	if !strings.HasPrefix(loaded.OpenAPI, "3.") {
		t.Fatalf("served OpenAPI %q, want 3.x", loaded.OpenAPI)
	}
}
