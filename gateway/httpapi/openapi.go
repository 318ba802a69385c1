package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	apiv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/api/v1"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

// The document served at /openapi.json is OpenAPI 3, built once per
// process (at the first request, or by OpenAPI) from two sources:
//
//   - the Swagger 2 document `make generate` writes from proto/ and
//     proto/http.yaml (openapi/docrepo.swagger.json, embedded): paths,
//     methods, parameters, which message or field is each body
//     (response_body), and the proto comments as descriptions; it is
//     converted with kin-openapi's openapi2conv;
//   - the proto descriptors, from which every schema is regenerated to say
//     what the gateway's Marshaler really writes (see marshal.go): proto
//     field names, every integer a JSON integer (int64 included), RFC 3339
//     date-times, null for an unset optional or message field (nullable,
//     and still required), fields marked json_omit_unset left out, messages
//     marked json_list written as bare arrays, google.protobuf.Struct as a
//     free-form object, and no other properties (additionalProperties:
//     false), so a field the document does not know is a mismatch too.
//
// Then the routes grpc-gateway does not know are added (the multipart
// upload, the version upload, the download, and /healthz, /readyz,
// /openapi.json), every operation gets its {"detail": ...} error
// responses, and the bearer security scheme applies to all but the
// operational routes. The end-to-end tests validate every response they
// get against this document (gateway/e2e/openapi_test.go).

var (
	openAPIOnce    sync.Once
	openAPIDoc     *openapi3.T
	openAPIJSON    []byte
	openAPIErr     error
	bodyPathParams map[protoreflect.FullName][]string
)

// OpenAPI returns the OpenAPI 3 document of the REST API. It is shared:
// callers must not modify it.
func OpenAPI() (*openapi3.T, error) {
	openAPIOnce.Do(func() {
		var b *builder
		if b, openAPIErr = build(openapiDoc); openAPIErr == nil {
			openAPIDoc, bodyPathParams = b.doc, b.bodyPathParams
			openAPIJSON, openAPIErr = json.Marshal(openAPIDoc)
		}
	})
	return openAPIDoc, openAPIErr
}

// OpenAPIJSON returns the document as served at /openapi.json.
func OpenAPIJSON() ([]byte, error) {
	_, err := OpenAPI()
	return openAPIJSON, err
}

func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	b, err := OpenAPIJSON()
	if err != nil {
		writeError(w, r, fmt.Errorf("openapi: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// commonErrors are the error statuses every API route can answer: a
// malformed request, authentication, scope, a request body over the limit,
// the per-key rate limit, and a failing, unreachable or slow service.
var commonErrors = []int{400, 401, 403, 413, 429, 500, 503, 504}

// routeErrors are the further statuses of each route.
var routeErrors = map[string][]int{
	"GET /apiv2/pub/documents/{doc_id}":                                        {404},
	"POST /apiv2/pub/documents/upload":                                         {404, 409, 413, 422},
	"GET /apiv2/pub/documents/{doc_id}/download":                               {404, 416},
	"HEAD /apiv2/pub/documents/{doc_id}/download":                              {404, 416},
	"PATCH /apiv3/pub/documents/{doc_id}":                                      {404, 422, 423},
	"GET /apiv3/pub/documents/{doc_id}/versions":                               {404},
	"POST /apiv3/pub/documents/{doc_id}/versions":                              {404, 413, 423},
	"POST /apiv3/pub/documents/{doc_id}/lock":                                  {404, 423},
	"POST /apiv3/pub/documents/{doc_id}/unlock":                                {404, 423},
	"PUT /apiv3/pub/documents/{doc_id}/customfields/{template_id}":             {404, 422, 423},
	"DELETE /apiv2/pub/documents/{doc_id}":                                     {404, 423},
	"POST /apiv2/pub/documents/bulk":                                           {404},
	"GET /apiv2/pub/trash":                                                     nil,
	"POST /apiv2/pub/trash/{doc_id}/restore":                                   {404},
	"DELETE /apiv2/pub/trash/{doc_id}":                                         {404},
	"GET /apiv2/pub/folders":                                                   {404},
	"POST /apiv2/pub/folders":                                                  {404, 422},
	"POST /apiv2/pub/folders/{folder_id}/move":                                 {404, 422},
	"DELETE /apiv2/pub/folders/{folder_id}":                                    {404},
	"POST /apiv2/pub/search":                                                   nil,
	"GET /apiv2/pub/schema/fields":                                             nil,
	"GET /apiv2/pub/schema/values/{field_name}":                                {404},
	"GET /apiv3/pub/documents/{doc_id}/history":                                {404},
	"GET /apiv2/pub/audit":                                                     nil,
	"POST /apiv2/pub/webhooks":                                                 {404, 422},
	"GET /apiv2/pub/webhooks":                                                  nil,
	"DELETE /apiv2/pub/webhooks/{webhook_id}":                                  {404},
	"GET /apiv2/pub/webhooks/{webhook_id}/deliveries":                          {404},
	"POST /apiv2/pub/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver": {404},
	"POST /apiv2/pub/webhooks/{webhook_id}/resume":                             {404},
	"GET " + healthzPath:                                                       nil,
	"GET " + readyzPath:                                                        nil,
	"GET " + openAPIPath:                                                       nil,
}

const (
	healthzPath = "/healthz"
	readyzPath  = "/readyz"
	openAPIPath = "/openapi.json"
)

// uploadLimits are docs/api.md §4.1's length limits of the upload form fields.
var uploadLimits = map[string]uint64{
	"description": 400, "doc_type": 60, "doc_status": 50, "account_number": 255,
	"reference_number": 255, "from_entity": 255, "to_entity": 255, "rev_number": 10,
}

// requestRequired are the request body fields the spec requires that the
// services check; the document requires bodyRequired's too (marshal.go:
// the gateway checks those).
var requestRequired = map[protoreflect.FullName][]string{
	"docrepo.folder.v1.CreateFolderRequest":   {"name"},
	"docrepo.folder.v1.MoveFolderRequest":     {"new_parent_id"},
	"docrepo.webhook.v1.CreateWebhookRequest": {"url", "event_types", "owner"},
}

// schemaMode says which side of the API a schema describes.
type schemaMode int

const (
	// response: what Marshaler writes.
	response schemaMode = iota
	// request: what the gateway reads with protojson: every field optional
	// unless the spec requires it, null accepted for every field.
	request
)

type builder struct {
	doc *openapi3.T
	// swagger holds the converted generated schemas, for their
	// descriptions.
	swagger openapi3.Schemas
	// names maps a generated schema name ("v1Document") to its message.
	names map[string]protoreflect.MessageDescriptor
	// services maps a service's short name to its descriptor.
	services map[string]protoreflect.ServiceDescriptor
	// built maps a message and mode to the component name it has.
	built map[string]string
	// components describes each generated component (for tests).
	components map[string]component
	schemas    openapi3.Schemas
	// bodyPathParams maps a request message whose body is "*" to the path
	// parameters its JSON body must not carry (marshal.go).
	bodyPathParams map[protoreflect.FullName][]string
}

// component is what a generated schema component describes.
type component struct {
	message protoreflect.MessageDescriptor
	mode    schemaMode
	exclude []string
}

func buildOpenAPI(swagger []byte) (*openapi3.T, error) {
	b, err := build(swagger)
	if err != nil {
		return nil, err
	}
	return b.doc, nil
}

// build builds the document and returns the builder that did it.
func build(swagger []byte) (*builder, error) {
	var doc2 openapi2.T
	if err := json.Unmarshal(swagger, &doc2); err != nil {
		return nil, fmt.Errorf("openapi: read the generated swagger: %w", err)
	}
	doc, err := openapi2conv.ToV3(&doc2)
	if err != nil {
		return nil, fmt.Errorf("openapi: convert to OpenAPI 3: %w", err)
	}
	b := &builder{doc: doc, names: map[string]protoreflect.MessageDescriptor{}, services: map[string]protoreflect.ServiceDescriptor{},
		built: map[string]string{}, components: map[string]component{}, schemas: openapi3.Schemas{},
		bodyPathParams: map[protoreflect.FullName][]string{}}
	if doc.Components != nil {
		b.swagger = doc.Components.Schemas
	}
	if err := b.indexDescriptors(); err != nil {
		return nil, err
	}
	doc.Info = &openapi3.Info{
		Title:   "docrepo REST API",
		Version: "v1",
		Description: "The public REST API of docrepo (spec paths /apiv2/pub and /apiv3/pub, plus the extensions of docs/design.md §4).\n\n" +
			"Every call sends `Authorization: Bearer <token>`; the scopes an operation needs are in `x-docrepo-scopes`. " +
			"JSON uses the proto field names; integers are JSON numbers; date-times are RFC 3339; an unset optional value is `null`; " +
			"every error body is `{\"detail\": \"...\"}`.",
	}
	doc.Servers = openapi3.Servers{{URL: "/"}}
	doc.Components = &openapi3.Components{
		SecuritySchemes: openapi3.SecuritySchemes{
			"bearerAuth": {Value: openapi3.NewSecurityScheme().WithType("http").WithScheme("bearer").
				WithDescription("An API key created with `docrepoctl key create` (shown once).")},
		},
	}
	doc.Security = openapi3.SecurityRequirements{{"bearerAuth": []string{}}}

	b.schemas["Error"] = openapi3.NewSchemaRef("", &openapi3.Schema{
		Type:                 &openapi3.Types{openapi3.TypeObject},
		Description:          "Every error response (docs/api.md §7).",
		Required:             []string{"detail"},
		Properties:           openapi3.Schemas{"detail": openapi3.NewSchemaRef("", describe(openapi3.NewStringSchema(), "What went wrong."))},
		AdditionalProperties: openapi3.AdditionalProperties{Has: openapi3.Ptr(false)},
	})

	// The routes of proto/http.yaml.
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			if err := b.rpcOperation(method, path, op); err != nil {
				return nil, fmt.Errorf("openapi: %s %s: %w", method, path, err)
			}
		}
	}
	if err := b.handWritten(); err != nil {
		return nil, err
	}
	b.operational()
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			key := method + " " + path
			extra, ok := routeErrors[key]
			if !ok {
				return nil, fmt.Errorf("openapi: %s has no entry in routeErrors", key)
			}
			if op.Security == nil || len(*op.Security) > 0 {
				b.errorResponses(op, append(slices.Clone(commonErrors), extra...))
			}
		}
	}
	doc.Components.Schemas = b.schemas
	doc.Tags = nil
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi: the built document is not valid: %w", err)
	}
	return b, nil
}

// indexDescriptors finds every docrepo message and service, keyed as
// protoc-gen-openapiv2 names their definitions ("v1" + message name).
func (b *builder) indexDescriptors() error {
	ambiguous := map[string]bool{}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		pkg := string(fd.Package())
		if !strings.HasPrefix(pkg, "docrepo.") {
			return true
		}
		version := pkg[strings.LastIndex(pkg, ".")+1:]
		msgs := fd.Messages()
		for i := 0; i < msgs.Len(); i++ {
			name := version + string(msgs.Get(i).Name())
			if _, dup := b.names[name]; dup {
				ambiguous[name] = true
			}
			b.names[name] = msgs.Get(i)
		}
		svcs := fd.Services()
		for i := 0; i < svcs.Len(); i++ {
			b.services[string(svcs.Get(i).Name())] = svcs.Get(i)
		}
		return true
	})
	for name := range ambiguous {
		delete(b.names, name)
	}
	if len(b.services) == 0 {
		return errors.New("openapi: no docrepo services are registered")
	}
	return nil
}

// method finds the RPC of a generated operation ("FolderService_ListFolders").
func (b *builder) method(operationID string) (protoreflect.MethodDescriptor, error) {
	svc, name, ok := strings.Cut(operationID, "_")
	if !ok || b.services[svc] == nil {
		return nil, fmt.Errorf("operation %q names no known service", operationID)
	}
	m := b.services[svc].Methods().ByName(protoreflect.Name(name))
	if m == nil {
		return nil, fmt.Errorf("operation %q names no known method", operationID)
	}
	return m, nil
}

// scopes are the scopes an RPC accepts (its docrepo.api.v1.access option).
func scopes(m protoreflect.MethodDescriptor) []string {
	access, _ := proto.GetExtension(m.Options(), apiv1.E_Access).(*apiv1.Access)
	return access.GetAnyScope()
}

func setScopes(op *openapi3.Operation, m protoreflect.MethodDescriptor) {
	sc := scopes(m)
	if op.Extensions == nil {
		op.Extensions = map[string]any{}
	}
	op.Extensions["x-docrepo-scopes"] = sc
	note := "Scope: " + strings.Join(sc, " or ") + "."
	if op.Description == "" {
		op.Description = note
	} else {
		op.Description += "\n\n" + note
	}
}

// rpcOperation rewrites a generated operation: integer parameters, the
// request body and the 200 response from the descriptors.
func (b *builder) rpcOperation(method, path string, op *openapi3.Operation) error {
	m, err := b.method(op.OperationID)
	if err != nil {
		return err
	}
	setScopes(op, m)
	var pathParams []string
	for _, p := range op.Parameters {
		pv := p.Value
		if pv.In == openapi3.ParameterInPath {
			pathParams = append(pathParams, pv.Name)
		}
		fd := m.Input().Fields().ByName(protoreflect.Name(pv.Name))
		if fd == nil {
			return fmt.Errorf("parameter %s is no field of %s", pv.Name, m.Input().FullName())
		}
		desc := pv.Description
		pv.Schema = openapi3.NewSchemaRef("", b.scalar(fd))
		pv.Description = desc
	}
	if rb := op.RequestBody; rb != nil {
		mt := rb.Value.Content.Get("application/json")
		if mt == nil || mt.Schema == nil {
			return errors.New("a request body without a JSON schema")
		}
		name := schemaName(mt.Schema.Ref)
		exclude := pathParams
		if name != "v1"+string(m.Input().Name()) {
			// A body "*" minus the path parameters: generated as
			// <Service><Method>Body.
			name = strings.ReplaceAll(op.OperationID, "_", "") + "Body"
			if len(pathParams) > 0 {
				b.bodyPathParams[m.Input().FullName()] = pathParams
			}
		} else {
			exclude = nil
		}
		mt.Schema = b.namedMessage(name, m.Input(), exclude, request)
		// An empty body reads as an empty message (grpc-gateway ignores
		// io.EOF): the service, not the gateway, says what is missing.
		rb.Value.Required = false
	}
	ok := op.Responses.Status(http.StatusOK)
	if ok == nil {
		return errors.New("no 200 response")
	}
	mt := ok.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return errors.New("a 200 response without a JSON schema")
	}
	if mt.Schema, err = b.responseBody(mt.Schema); err != nil {
		return err
	}
	if ok.Value.Description == nil || *ok.Value.Description == "" || *ok.Value.Description == "A successful response." {
		ok.Value.Description = openapi3.Ptr("OK")
	}
	op.Responses.Delete("default")
	return nil
}

// schemaName is the component name a local reference names.
func schemaName(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }

// responseBody regenerates a generated 200 schema: a reference to a
// message, or a bare array of messages or scalars (response_body of a
// repeated field).
func (b *builder) responseBody(s *openapi3.SchemaRef) (*openapi3.SchemaRef, error) {
	if s.Ref != "" {
		md := b.names[schemaName(s.Ref)]
		if md == nil {
			return nil, fmt.Errorf("schema %s is no docrepo message", s.Ref)
		}
		return b.messageRef(md, response), nil
	}
	if s.Value != nil && s.Value.Type.Is(openapi3.TypeArray) && s.Value.Items != nil {
		items, err := b.responseBody(s.Value.Items)
		if err != nil {
			return nil, err
		}
		arr := openapi3.NewArraySchema()
		arr.Items = items
		return openapi3.NewSchemaRef("", arr), nil
	}
	if s.Value != nil && s.Value.Type.Is(openapi3.TypeString) {
		return openapi3.NewSchemaRef("", openapi3.NewStringSchema()), nil
	}
	return nil, fmt.Errorf("unexpected response schema %+v", s.Value)
}

// messageRef returns a reference to the component of message md.
func (b *builder) messageRef(md protoreflect.MessageDescriptor, mode schemaMode) *openapi3.SchemaRef {
	name := string(md.ParentFile().Package()[strings.LastIndex(string(md.ParentFile().Package()), ".")+1:]) + string(md.Name())
	return b.namedMessage(name, md, nil, mode)
}

// namedMessage builds (once) the component name for md and returns a
// reference to it. A message used both ways gets a second component for
// requests.
func (b *builder) namedMessage(name string, md protoreflect.MessageDescriptor, exclude []string, mode schemaMode) *openapi3.SchemaRef {
	key := fmt.Sprintf("%s|%d|%s", md.FullName(), mode, strings.Join(exclude, ","))
	if n, ok := b.built[key]; ok {
		return openapi3.NewSchemaRef("#/components/schemas/"+n, b.schemas[n].Value)
	}
	for taken := true; taken; {
		_, taken = b.schemas[name]
		if taken {
			name += "Request"
		}
	}
	b.built[key] = name
	b.components[name] = component{message: md, mode: mode, exclude: exclude}
	s := &openapi3.Schema{}
	b.schemas[name] = openapi3.NewSchemaRef("", s) // placeholder for recursion
	*s = *b.messageSchema(name, md, exclude, mode)
	return openapi3.NewSchemaRef("#/components/schemas/"+name, s)
}

// messageSchema is the object Marshaler writes for md (response), or the
// one protojson reads (request).
func (b *builder) messageSchema(name string, md protoreflect.MessageDescriptor, exclude []string, mode schemaMode) *openapi3.Schema {
	s := openapi3.NewObjectSchema()
	s.Properties = openapi3.Schemas{}
	s.AdditionalProperties = openapi3.AdditionalProperties{Has: openapi3.Ptr(false)}
	var orig *openapi3.Schema
	if ref := b.swagger[name]; ref != nil && ref.Value != nil {
		orig = ref.Value
		s.Title, s.Description = cleanComment(orig.Title), cleanComment(orig.Description)
	}
	if s.Description == "" && s.Title == "" {
		s.Description = string(md.FullName())
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		fname := string(fd.Name())
		if slices.Contains(exclude, fname) {
			continue
		}
		ps := b.fieldSchema(fd, mode)
		realOneof := fd.ContainingOneof() != nil && !fd.ContainingOneof().IsSynthetic()
		presence := fd.HasPresence() && !realOneof
		omit, _ := proto.GetExtension(fd.Options(), apiv1.E_JsonOmitUnset).(bool)
		// protojson reads null as "unset" for any field; the Marshaler
		// writes null only for unset fields with presence.
		if (mode == request && !slices.Contains(bodyRequired[md.FullName()], fname)) || (presence && !omit) {
			ps = nullable(ps)
		}
		if mode == response && !realOneof && !(presence && omit) {
			s.Required = append(s.Required, fname)
		}
		if orig != nil {
			// A generated property that is a reference describes the
			// referenced type, not the field: keep only field comments.
			if o := orig.Properties[fname]; o != nil && o.Ref == "" && o.Value != nil {
				if d := cleanComment(firstNonEmpty(o.Value.Description, o.Value.Title)); d != "" {
					ps = withDescription(ps, d)
				}
			}
		}
		s.Properties[fname] = ps
	}
	if mode == request {
		s.Required = slices.Concat(requestRequired[md.FullName()], bodyRequired[md.FullName()])
	}
	return s
}

// cleanComment drops linter directives from a proto comment.
func cleanComment(c string) string {
	var keep []string
	for _, line := range strings.Split(c, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "buf:lint:") {
			keep = append(keep, line)
		}
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

// describe sets a schema's description.
func describe(s *openapi3.Schema, d string) *openapi3.Schema {
	s.Description = d
	return s
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// withDescription describes a property; a reference is wrapped, since
// siblings of $ref are ignored.
func withDescription(s *openapi3.SchemaRef, d string) *openapi3.SchemaRef {
	if s.Ref != "" {
		return openapi3.NewSchemaRef("", &openapi3.Schema{AllOf: openapi3.SchemaRefs{s}, Description: d})
	}
	v := *s.Value
	v.Description = d
	return openapi3.NewSchemaRef("", &v)
}

// nullable allows null besides s.
func nullable(s *openapi3.SchemaRef) *openapi3.SchemaRef {
	if s.Ref != "" {
		return openapi3.NewSchemaRef("", &openapi3.Schema{AllOf: openapi3.SchemaRefs{s}, Nullable: true})
	}
	v := *s.Value
	v.Nullable = true
	return openapi3.NewSchemaRef("", &v)
}

// fieldSchema is the schema of a field's value: a list, a map or one
// value.
func (b *builder) fieldSchema(fd protoreflect.FieldDescriptor, mode schemaMode) *openapi3.SchemaRef {
	switch {
	case fd.IsMap():
		obj := openapi3.NewObjectSchema()
		obj.AdditionalProperties = openapi3.AdditionalProperties{Schema: b.valueSchema(fd.MapValue(), mode)}
		return openapi3.NewSchemaRef("", obj)
	case fd.IsList():
		arr := openapi3.NewArraySchema()
		arr.Items = b.valueSchema(fd, mode)
		return openapi3.NewSchemaRef("", arr)
	}
	return b.valueSchema(fd, mode)
}

// valueSchema is the schema of one value of fd's type.
func (b *builder) valueSchema(fd protoreflect.FieldDescriptor, mode schemaMode) *openapi3.SchemaRef {
	if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
		return openapi3.NewSchemaRef("", b.scalar(fd))
	}
	md := fd.Message()
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return openapi3.NewSchemaRef("", openapi3.NewDateTimeSchema())
	case "google.protobuf.Struct":
		return openapi3.NewSchemaRef("", describe(openapi3.NewObjectSchema(), "Any JSON object."))
	case "google.protobuf.Value":
		return openapi3.NewSchemaRef("", &openapi3.Schema{Nullable: true, Description: "Any JSON value."})
	case "google.protobuf.ListValue":
		arr := openapi3.NewArraySchema()
		arr.Items = openapi3.NewSchemaRef("", &openapi3.Schema{Nullable: true})
		return openapi3.NewSchemaRef("", arr)
	}
	if list, _ := proto.GetExtension(md.Options(), apiv1.E_JsonList).(bool); list && md.Fields().Len() == 1 {
		arr := openapi3.NewArraySchema()
		arr.Items = b.valueSchema(md.Fields().Get(0), mode)
		return openapi3.NewSchemaRef("", arr)
	}
	return b.messageRef(md, mode)
}

// scalar is the schema of a non-message value.
func (b *builder) scalar(fd protoreflect.FieldDescriptor) *openapi3.Schema {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return openapi3.NewBoolSchema()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return openapi3.NewInt32Schema()
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return openapi3.NewInt64Schema()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return openapi3.NewInt32Schema().WithMin(0)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return openapi3.NewInt64Schema().WithMin(0)
	case protoreflect.FloatKind:
		return openapi3.NewFloat64Schema().WithFormat("float")
	case protoreflect.DoubleKind:
		return openapi3.NewFloat64Schema()
	case protoreflect.BytesKind:
		return openapi3.NewBytesSchema()
	case protoreflect.EnumKind:
		s := openapi3.NewStringSchema()
		vals := fd.Enum().Values()
		for i := 0; i < vals.Len(); i++ {
			s.Enum = append(s.Enum, string(vals.Get(i).Name()))
		}
		return s
	}
	return openapi3.NewStringSchema()
}

// errorResponses documents each status as a {"detail": ...} body.
func (b *builder) errorResponses(op *openapi3.Operation, statuses []int) {
	sort.Ints(statuses)
	for _, st := range slices.Compact(statuses) {
		resp := openapi3.NewResponse().WithDescription(http.StatusText(st)).
			WithContent(openapi3.NewContentWithJSONSchemaRef(openapi3.NewSchemaRef("#/components/schemas/Error", b.schemas["Error"].Value)))
		if st == http.StatusRequestedRangeNotSatisfiable {
			resp.Headers = downloadHeaderDocs(downloadUnsatisfiable)
		}
		if st == http.StatusTooManyRequests {
			resp.Headers = openapi3.Headers{"Retry-After": &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{
				Description: "Seconds until the key may call again.", Required: true,
				Schema: openapi3.NewSchemaRef("", openapi3.NewIntegerSchema().WithMin(0))}}}}
		}
		op.Responses.Set(strconv.Itoa(st), &openapi3.ResponseRef{Value: resp})
	}
}

// rpc finds a method by its gRPC full method name ("/pkg.Service/Method").
func (b *builder) rpc(fullMethod string) protoreflect.MethodDescriptor {
	full := protoreflect.FullName(strings.ReplaceAll(strings.TrimPrefix(fullMethod, "/"), "/", "."))
	svc := b.services[string(full.Parent().Name())]
	if svc == nil {
		return nil
	}
	return svc.Methods().ByName(full.Name())
}

func (b *builder) addOperation(method, path string, op *openapi3.Operation) {
	item := b.doc.Paths.Value(path)
	if item == nil {
		item = &openapi3.PathItem{}
		b.doc.Paths.Set(path, item)
	}
	item.SetOperation(method, op)
}

func pathParam(name, desc string) *openapi3.ParameterRef {
	return &openapi3.ParameterRef{Value: openapi3.NewPathParameter(name).WithDescription(desc).
		WithSchema(openapi3.NewInt64Schema())}
}

func okJSON(desc string, s *openapi3.SchemaRef) *openapi3.ResponseRef {
	return &openapi3.ResponseRef{Value: openapi3.NewResponse().WithDescription(desc).
		WithContent(openapi3.NewContentWithJSONSchemaRef(s))}
}

func header(desc string, required bool, s *openapi3.Schema) *openapi3.HeaderRef {
	return &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{
		Description: desc, Required: required, Schema: openapi3.NewSchemaRef("", s)}}}
}

// handWritten adds the routes the gateway serves itself (upload.go,
// download.go).
func (b *builder) handWritten() error {
	upload := b.rpc(documentv1.DocumentService_UploadDocument_FullMethodName)
	version := b.rpc(documentv1.DocumentService_UploadVersion_FullMethodName)
	download := b.rpc(documentv1.DocumentService_DownloadFile_FullMethodName)
	if upload == nil || version == nil || download == nil {
		return errors.New("openapi: the document service's streaming RPCs are not registered")
	}
	b.uploadRoute(upload)
	b.versionRoute(version)
	b.downloadRoutes(download)
	return nil
}

// uploadForm is the multipart form of an upload: the form fields are
// UploadMetadata's, the file part is "file".
func (b *builder) uploadForm() *openapi3.Schema {
	meta := (&documentv1.UploadMetadata{}).ProtoReflect().Descriptor()
	form := openapi3.NewObjectSchema()
	form.Properties = openapi3.Schemas{"file": openapi3.NewSchemaRef("", describe(openapi3.NewStringSchema().WithFormat("binary"),
		"The file (any type). Streamed to the document service; never held in memory."))}
	form.Required = []string{"file", "folder_id"}
	form.AdditionalProperties = openapi3.AdditionalProperties{Has: openapi3.Ptr(false)}
	fields := meta.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Name() == "idempotency_key" {
			continue // the Idempotency-Key header, not a form field
		}
		s := b.scalar(fd)
		if n, ok := uploadLimits[string(fd.Name())]; ok {
			s.MaxLength = openapi3.Ptr(n)
		}
		switch fd.Name() {
		case "date":
			s.Description = "ISO 8601 date (or date-time): the business date."
		case "doc_type":
			s.Description = "Must name an existing document type (422 `Unknown doc_type: <x>` otherwise)."
		case "doc_number_prefix":
			s.Description = "When given, doc_number becomes `<prefix>-<5-digit sequence>`."
		case "description":
			s.Description = "Title; default: the uploaded file name."
		case "subdoctype":
			s.Description = "Sub-type of the document (extension)."
		}
		form.Properties[string(fd.Name())] = openapi3.NewSchemaRef("", s)
	}
	return form
}

// uploadRoute adds POST /apiv2/pub/documents/upload (docs/api.md §4.1).
func (b *builder) uploadRoute(upload protoreflect.MethodDescriptor) {
	form := b.uploadForm()
	uploadOp := &openapi3.Operation{
		OperationID: "DocumentService_UploadDocument",
		Tags:        []string{"DocumentService"},
		Summary:     "Upload a document and its file (docs/api.md §4.1).",
		Description: "Creates a document and its first file in one multipart/form-data request; the document goes into folder_id and is visible to the uploader's groups.",
		Parameters: openapi3.Parameters{{Value: openapi3.NewHeaderParameter("Idempotency-Key").
			WithDescription("Extension: an upload repeated by the same user under the same key creates nothing and returns the first upload's result (retries, resumed imports); the same key with a different file is a 409. 1 to 255 printable ASCII characters.").
			WithSchema(openapi3.NewStringSchema().WithMaxLength(255))}},
		RequestBody: &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).
			WithContent(openapi3.Content{"multipart/form-data": &openapi3.MediaType{Schema: openapi3.NewSchemaRef("", form)}})},
		Responses: openapi3.NewResponses(openapi3.WithStatus(200,
			okJSON("The created document (docs/api.md §2.9).", b.messageRef((&documentv1.UploadDocumentResponse{}).ProtoReflect().Descriptor(), response)))),
	}
	setScopes(uploadOp, upload)
	b.addOperation(http.MethodPost, "/apiv2/pub/documents/upload", uploadOp)
}

// versionRoute adds POST /apiv3/pub/documents/{doc_id}/versions: one part
// named file.
func (b *builder) versionRoute(version protoreflect.MethodDescriptor) {
	vform := openapi3.NewObjectSchema()
	vform.Properties = openapi3.Schemas{"file": openapi3.NewSchemaRef("", openapi3.NewStringSchema().WithFormat("binary"))}
	vform.Required = []string{"file"}
	vform.AdditionalProperties = openapi3.AdditionalProperties{Has: openapi3.Ptr(false)}
	versionOp := &openapi3.Operation{
		OperationID: "DocumentService_UploadVersion",
		Tags:        []string{"DocumentService"},
		Summary:     "Upload a new version of a document's file (extension).",
		Description: "The file becomes the current one; the previous one moves to the archive with type `replaced via api`. 423 while the document is locked.",
		Parameters:  openapi3.Parameters{pathParam("doc_id", "Document id.")},
		RequestBody: &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).
			WithContent(openapi3.Content{"multipart/form-data": &openapi3.MediaType{Schema: openapi3.NewSchemaRef("", vform)}})},
		Responses: openapi3.NewResponses(openapi3.WithStatus(200,
			okJSON("The version listing after the upload.", b.messageRef((&documentv1.VersionListing{}).ProtoReflect().Descriptor(), response)))),
	}
	setScopes(versionOp, version)
	b.addOperation(http.MethodPost, "/apiv3/pub/documents/{doc_id}/versions", versionOp)
}

// downloadRoutes adds GET and HEAD /apiv2/pub/documents/{doc_id}/download
// (docs/design.md §4).
func (b *builder) downloadRoutes(download protoreflect.MethodDescriptor) {
	binary := func(desc string, k downloadKind) *openapi3.ResponseRef {
		r := openapi3.NewResponse().WithDescription(desc).WithContent(openapi3.Content{
			"*/*": &openapi3.MediaType{Schema: openapi3.NewSchemaRef("", openapi3.NewStringSchema().WithFormat("binary"))}})
		r.Headers = downloadHeaderDocs(k)
		return &openapi3.ResponseRef{Value: r}
	}
	notModified := openapi3.NewResponse().WithDescription("If-None-Match matched the ETag.")
	notModified.Headers = downloadHeaderDocs(downloadNotModified)
	downloadOp := &openapi3.Operation{
		OperationID: "DocumentService_DownloadFile",
		Tags:        []string{"DocumentService"},
		Summary:     "Download a document's file (extension).",
		Description: "Streams the newest linked file, or the version named by linked_file_id, or the archived version named by archive_id. " +
			"Content-Type is the file's MIME type. A single `Range: bytes=` range gives 206; If-Range and If-None-Match are honoured.",
		Parameters: openapi3.Parameters{
			pathParam("doc_id", "Document id."),
			{Value: openapi3.NewQueryParameter("linked_file_id").WithDescription("A file version id (ownid); default: the current file.").WithSchema(openapi3.NewInt64Schema())},
			{Value: openapi3.NewQueryParameter("archive_id").WithDescription("An archive entry id (own_id of version_history); not with linked_file_id.").WithSchema(openapi3.NewInt64Schema())},
			{Value: openapi3.NewHeaderParameter("Range").WithDescription("One range, `bytes=FIRST-[LAST]` or `bytes=-SUFFIX`.").WithSchema(openapi3.NewStringSchema())},
			{Value: openapi3.NewHeaderParameter("If-Range").WithDescription("An ETag or HTTP date; when it no longer matches, the whole file is sent.").WithSchema(openapi3.NewStringSchema())},
			{Value: openapi3.NewHeaderParameter("If-None-Match").WithDescription("ETags; a match gives 304.").WithSchema(openapi3.NewStringSchema())},
		},
		Responses: openapi3.NewResponses(
			openapi3.WithStatus(200, binary("The whole file.", downloadWhole)),
			openapi3.WithStatus(206, binary("The requested range.", downloadPartial)),
			openapi3.WithStatus(304, &openapi3.ResponseRef{Value: notModified}),
		),
	}
	setScopes(downloadOp, download)
	b.addOperation(http.MethodGet, "/apiv2/pub/documents/{doc_id}/download", downloadOp)
	headOp := *downloadOp
	headOp.OperationID = downloadOp.OperationID + "Head"
	headOp.Summary = "The headers a download would send, without the body (extension)."
	b.addOperation(http.MethodHead, "/apiv2/pub/documents/{doc_id}/download", &headOp)
}

// operational adds /healthz, /readyz and /openapi.json: no token needed.
// /metrics and the detailed /readyz are on the admin listener, not in this
// API (Config.AdminAddr).
func (b *builder) operational() {
	none := &openapi3.SecurityRequirements{}
	status := func(desc string) *openapi3.ResponseRef {
		s := openapi3.NewObjectSchema()
		s.Required = []string{"status"}
		s.Properties = openapi3.Schemas{"status": openapi3.NewSchemaRef("", openapi3.NewStringSchema().WithEnum("ok", "unavailable"))}
		s.AdditionalProperties = openapi3.AdditionalProperties{Has: openapi3.Ptr(false)}
		return okJSON(desc, openapi3.NewSchemaRef("", s))
	}
	b.addOperation(http.MethodGet, healthzPath, &openapi3.Operation{
		OperationID: "healthz", Summary: "Liveness: the gateway process answers.", Security: none,
		Responses: openapi3.NewResponses(openapi3.WithStatus(200, status("Alive."))),
	})
	b.addOperation(http.MethodGet, readyzPath, &openapi3.Operation{
		OperationID: "readyz", Summary: "Readiness: every backend service answers its gRPC health check (which one does not is on the admin listener's /readyz).", Security: none,
		Responses: openapi3.NewResponses(
			openapi3.WithStatus(200, status("Every backend is serving.")),
			openapi3.WithStatus(503, status("A backend is not serving.")),
		),
	})
	b.addOperation(http.MethodGet, openAPIPath, &openapi3.Operation{
		OperationID: "openapi", Summary: "This OpenAPI 3 document.", Security: none,
		Responses: openapi3.NewResponses(openapi3.WithStatus(200, okJSON("The document.", openapi3.NewSchemaRef("", openapi3.NewObjectSchema())))),
	})
}
