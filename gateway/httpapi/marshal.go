package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	apiv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/api/v1"
)

// maxJSONBody bounds a JSON request body.
const maxJSONBody = 4 << 20

// Marshaler writes docrepo's JSON (docs/design.md §2): proto field names
// (snake_case as the spec spells them), every integer as a JSON number
// (int64 included), RFC 3339 datetimes, null for unset optional values,
// bare arrays for json_list messages and list bodies, and fields marked
// json_omit_unset left out when unset. It reads request bodies with
// protojson, which refuses unknown fields and wrong types.
type Marshaler struct{}

var _ runtime.Marshaler = Marshaler{}

// ContentType implements runtime.Marshaler.
func (Marshaler) ContentType(any) string { return "application/json" }

// Marshal implements runtime.Marshaler.
func (Marshaler) Marshal(v any) ([]byte, error) {
	var e encoder
	if err := e.value(v); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

// Unmarshal implements runtime.Marshaler.
func (Marshaler) Unmarshal(data []byte, v any) error {
	if m, ok := v.(proto.Message); ok {
		if jsonDepth(data) > maxJSONDepth {
			return fmt.Errorf("Invalid request body: nested too deeply (at most %d levels)", maxJSONDepth)
		}
		if err := (protojson.UnmarshalOptions{}).Unmarshal(data, m); err != nil {
			return errors.New(cleanDecodeError(err))
		}
		return checkBody(data, m.ProtoReflect().Descriptor())
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("Invalid request body: %v", err)
	}
	return nil
}

// NewDecoder implements runtime.Marshaler.
func (m Marshaler) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		data, err := io.ReadAll(io.LimitReader(r, maxJSONBody+1))
		if err != nil {
			return fmt.Errorf("Invalid request body: %v", err)
		}
		if len(data) > maxJSONBody {
			return fmt.Errorf("Invalid request body: larger than %d bytes", maxJSONBody)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			if m, ok := v.(proto.Message); ok {
				if req := bodyRequired[m.ProtoReflect().Descriptor().FullName()]; len(req) > 0 {
					return missingField(req[0])
				}
			}
			return io.EOF
		}
		return m.Unmarshal(data, v)
	})
}

// NewEncoder implements runtime.Marshaler.
func (m Marshaler) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := m.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
}

// maxJSONDepth bounds the nesting of a request body: far more than any
// request needs (a where tree is at most 32 clauses deep, two levels each),
// far less than the services' protobuf decoders accept (a deeper body
// would pass the gateway and fail in the service, a 500).
const maxJSONDepth = 256

// jsonDepth returns the deepest nesting of objects and arrays in data,
// not counting brackets inside strings.
func jsonDepth(data []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range data {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// checkBody applies what protojson cannot to a body it has decoded (so
// well-formed), reading the top-level object once:
//
//   - a body "*" must not name a path parameter (the path would silently
//     win; OpenAPI leaves them out of the body schema);
//   - bodyRequired fields must be present and not null;
//   - a number written as a string, which protojson accepts (proto3's JSON
//     mapping reads "20" as 20 and int64 as "5"), is a wrong type (docs/api.md
//     §7: 400): the API's numbers are JSON numbers (docs/design.md §2).
func checkBody(data []byte, md protoreflect.MessageDescriptor) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil // not an object: protojson has judged it already
	}
	if _, err := OpenAPI(); err != nil {
		return err
	}
	for _, p := range bodyPathParams[md.FullName()] {
		fd := md.Fields().ByName(protoreflect.Name(p))
		if fd == nil {
			continue
		}
		// protojson accepts a field by its proto name and its JSON name.
		for _, k := range []string{fd.TextName(), fd.JSONName()} {
			if _, ok := obj[k]; ok {
				return fmt.Errorf("Invalid request body: unknown field %q", k)
			}
		}
	}
	for _, r := range bodyRequired[md.FullName()] {
		fd := md.Fields().ByName(protoreflect.Name(r))
		present := false
		for _, k := range []string{fd.TextName(), fd.JSONName()} {
			if v, ok := obj[k]; ok && string(bytes.TrimSpace(v)) != "null" {
				present = true
			}
		}
		if !present {
			return missingField(r)
		}
	}
	return checkJSONNumbers(obj, md)
}

// checkJSONNumbers refuses a quoted number in the fields of md present in
// obj, and in nested messages; the well-known types (a Struct's free-form
// values) are left as they are.
func checkJSONNumbers(obj map[string]json.RawMessage, md protoreflect.MessageDescriptor) error {
	if strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
		return nil
	}
	for key, raw := range obj {
		fd := md.Fields().ByTextName(key)
		if fd == nil {
			fd = md.Fields().ByJSONName(key)
		}
		if fd == nil || fd.IsMap() {
			continue
		}
		vals := []json.RawMessage{raw}
		if fd.IsList() {
			vals = nil
			_ = json.Unmarshal(raw, &vals)
		}
		for _, v := range vals {
			if err := checkJSONNumber(v, fd); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkJSONNumber(v json.RawMessage, fd protoreflect.FieldDescriptor) error {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil {
			return nil // null, or a well-known type's JSON form
		}
		return checkJSONNumbers(obj, fd.Message())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind,
		protoreflect.FloatKind, protoreflect.DoubleKind:
		if t := bytes.TrimSpace(v); len(t) > 0 && t[0] == '"' {
			return fmt.Errorf("Invalid request body: invalid value for %s field %s: %s", fd.Kind(), fd.TextName(), t)
		}
	}
	return nil
}

// bodyRequired are request body fields whose absence the service cannot
// see (a repeated field reads the same absent, null or empty), so the
// gateway requires them: an empty PUT customfields body must not delete
// every row of the template.
var bodyRequired = map[protoreflect.FullName][]string{
	"docrepo.document.v1.SetCustomFieldsRequest": {"rows"},
}

// missingField is the spec's message for a missing required field (§7).
func missingField(name string) error { return errors.New("Missing required field: " + name) }

var (
	protoErrorPrefix = regexp.MustCompile(`^proto:\s*(\(line \d+:\d+\):\s*)?`)
	// jsonFieldName is a field named by its JSON (lowerCamelCase) name.
	jsonFieldName = regexp.MustCompile(`field ([a-z][a-z0-9]*[A-Z][A-Za-z0-9]*)`)
	upperLetter   = regexp.MustCompile(`[A-Z]`)
)

// cleanDecodeError turns protojson's message into a client-facing detail,
// naming fields as the API spells them (snake_case).
func cleanDecodeError(err error) string {
	// protojson inserts NBSPs to discourage parsing; they must go before
	// the prefix, whose \s does not match them.
	msg := strings.ReplaceAll(err.Error(), "\u00a0", " ")
	msg = protoErrorPrefix.ReplaceAllString(msg, "")
	msg = jsonFieldName.ReplaceAllStringFunc(msg, func(m string) string {
		return "field " + upperLetter.ReplaceAllStringFunc(strings.TrimPrefix(m, "field "), func(c string) string {
			return "_" + strings.ToLower(c)
		})
	})
	return "Invalid request body: " + msg
}

type encoder struct{ buf bytes.Buffer }

var protoMessageType = reflect.TypeOf((*proto.Message)(nil)).Elem()

func (e *encoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.buf.WriteString("null")
		return nil
	case proto.Message:
		return e.message(x.ProtoReflect())
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice && rv.Type().Elem().Implements(protoMessageType) {
		e.buf.WriteByte('[')
		for i := 0; i < rv.Len(); i++ {
			if i > 0 {
				e.buf.WriteByte(',')
			}
			if err := e.message(rv.Index(i).Interface().(proto.Message).ProtoReflect()); err != nil {
				return err
			}
		}
		e.buf.WriteByte(']')
		return nil
	}
	if rv.Kind() == reflect.Slice && rv.IsNil() {
		e.buf.WriteString("[]")
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	e.buf.Write(b)
	return nil
}

func (e *encoder) str(s string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	e.buf.Write(bytes.TrimRight(b.Bytes(), "\n"))
}

func (e *encoder) float(f float64) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		e.buf.WriteString("null")
	case f == 0 || (math.Abs(f) >= 1e-6 && math.Abs(f) < 1e21):
		e.buf.WriteString(strconv.FormatFloat(f, 'f', -1, 64))
	default:
		e.buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	}
}

func (e *encoder) message(m protoreflect.Message) error {
	md := m.Descriptor()
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		secs := m.Get(md.Fields().ByName("seconds")).Int()
		nanos := m.Get(md.Fields().ByName("nanos")).Int()
		e.str(time.Unix(secs, nanos).UTC().Format(time.RFC3339Nano))
		return nil
	case "google.protobuf.Struct":
		return e.structValue(m)
	case "google.protobuf.Value":
		return e.wellKnownValue(m)
	case "google.protobuf.ListValue":
		return e.listValue(m)
	}
	if listOpt, _ := proto.GetExtension(md.Options(), apiv1.E_JsonList).(bool); listOpt && md.Fields().Len() == 1 {
		return e.list(m.Get(md.Fields().Get(0)).List(), md.Fields().Get(0))
	}
	e.buf.WriteByte('{')
	first := true
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if oo := fd.ContainingOneof(); oo != nil && !oo.IsSynthetic() && !m.Has(fd) {
			continue
		}
		unsetOptional := fd.HasPresence() && !m.Has(fd)
		if unsetOptional {
			if omit, _ := proto.GetExtension(fd.Options(), apiv1.E_JsonOmitUnset).(bool); omit {
				continue
			}
		}
		if !first {
			e.buf.WriteByte(',')
		}
		first = false
		e.str(string(fd.Name()))
		e.buf.WriteByte(':')
		if unsetOptional {
			e.buf.WriteString("null")
			continue
		}
		if err := e.field(m.Get(fd), fd); err != nil {
			return err
		}
	}
	e.buf.WriteByte('}')
	return nil
}

func (e *encoder) field(v protoreflect.Value, fd protoreflect.FieldDescriptor) error {
	switch {
	case fd.IsList():
		return e.list(v.List(), fd)
	case fd.IsMap():
		e.buf.WriteByte('{')
		var err error
		first := true
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			if !first {
				e.buf.WriteByte(',')
			}
			first = false
			e.str(k.String())
			e.buf.WriteByte(':')
			err = e.scalar(mv, fd.MapValue())
			return err == nil
		})
		e.buf.WriteByte('}')
		return err
	}
	return e.scalar(v, fd)
}

func (e *encoder) list(l protoreflect.List, fd protoreflect.FieldDescriptor) error {
	e.buf.WriteByte('[')
	for i := 0; i < l.Len(); i++ {
		if i > 0 {
			e.buf.WriteByte(',')
		}
		if err := e.scalar(l.Get(i), fd); err != nil {
			return err
		}
	}
	e.buf.WriteByte(']')
	return nil
}

func (e *encoder) scalar(v protoreflect.Value, fd protoreflect.FieldDescriptor) error {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return e.message(v.Message())
	case protoreflect.BoolKind:
		e.buf.WriteString(strconv.FormatBool(v.Bool()))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		e.buf.WriteString(strconv.FormatInt(v.Int(), 10))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		e.buf.WriteString(strconv.FormatUint(v.Uint(), 10))
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		e.float(v.Float())
	case protoreflect.StringKind:
		e.str(v.String())
	case protoreflect.BytesKind:
		e.str(base64.StdEncoding.EncodeToString(v.Bytes()))
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			e.str(string(ev.Name()))
		} else {
			e.buf.WriteString(strconv.FormatInt(int64(v.Enum()), 10))
		}
	default:
		return fmt.Errorf("marshal: unsupported kind %v", fd.Kind())
	}
	return nil
}

func (e *encoder) structValue(m protoreflect.Message) error {
	fd := m.Descriptor().Fields().ByName("fields")
	mp := m.Get(fd).Map()
	// Deterministic order: sorted keys, with "id" first for readability.
	keys := make([]string, 0, mp.Len())
	mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k.String())
		return true
	})
	sortKeys(keys)
	e.buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			e.buf.WriteByte(',')
		}
		e.str(k)
		e.buf.WriteByte(':')
		if err := e.wellKnownValue(mp.Get(protoreflect.ValueOfString(k).MapKey()).Message()); err != nil {
			return err
		}
	}
	e.buf.WriteByte('}')
	return nil
}

func sortKeys(keys []string) {
	slices.SortFunc(keys, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == "id":
			return -1
		case b == "id":
			return 1
		}
		return strings.Compare(a, b)
	})
}

func (e *encoder) wellKnownValue(m protoreflect.Message) error {
	od := m.Descriptor().Oneofs().ByName("kind")
	fd := m.WhichOneof(od)
	if fd == nil {
		e.buf.WriteString("null")
		return nil
	}
	v := m.Get(fd)
	switch fd.Name() {
	case "null_value":
		e.buf.WriteString("null")
	case "number_value":
		e.float(v.Float())
	case "string_value":
		e.str(v.String())
	case "bool_value":
		e.buf.WriteString(strconv.FormatBool(v.Bool()))
	case "struct_value":
		return e.structValue(v.Message())
	case "list_value":
		return e.listValue(v.Message())
	}
	return nil
}

func (e *encoder) listValue(m protoreflect.Message) error {
	l := m.Get(m.Descriptor().Fields().ByName("values")).List()
	e.buf.WriteByte('[')
	for i := 0; i < l.Len(); i++ {
		if i > 0 {
			e.buf.WriteByte(',')
		}
		if err := e.wellKnownValue(l.Get(i).Message()); err != nil {
			return err
		}
	}
	e.buf.WriteByte(']')
	return nil
}
