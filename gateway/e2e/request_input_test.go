package e2e

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestInvalidUTF8IsBadRequest: text in a path or query parameter, or in
// an upload's filename, that is not UTF-8 is the client's mistake (a 400
// naming the parameter), not a failure to encode the backend call (a 500).
func TestInvalidUTF8IsBadRequest(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	res := u.uploadFile("u.txt", uniqText(t, 5))
	tests := []struct {
		name, path, detail string
	}{
		{name: "path parameter", path: "/apiv2/pub/schema/values/%ff",
			detail: "Invalid value for field_name: not valid UTF-8 text"},
		{name: "query parameter", path: "/apiv2/pub/schema/values/Documents.doc_type?search=%ff",
			detail: "Invalid value for search: not valid UTF-8 text"},
		{name: "include", path: fmt.Sprintf("/apiv2/pub/documents/%d?include=%%ff", res.DocID),
			detail: "Invalid value for include: not valid UTF-8 text"},
		{name: "folder search", path: "/apiv2/pub/folders?q=a%c3",
			detail: "Invalid value for q: not valid UTF-8 text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, u.do("GET", tt.path, nil), 400, tt.detail)
		})
	}

	// A filename is kept as data (origname), so it must be text too.
	var body bytes.Buffer
	fmt.Fprintf(&body, "--b\r\nContent-Disposition: form-data; name=\"folder_id\"\r\n\r\n%d\r\n", u.folder.FolderID)
	body.WriteString("--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\xffb.txt\"\r\n" +
		"Content-Type: text/plain\r\n\r\nhello\r\n--b--\r\n")
	r := u.do("POST", "/apiv2/pub/documents/upload",
		&multipartPayload{Reader: bytes.NewReader(body.Bytes()), contentType: "multipart/form-data; boundary=b"})
	expect(t, r, 400, "Invalid value for filename: not valid UTF-8 text")
}

// TestBodyCannotRepeatWhatThePathNames: a JSON body may not carry what the path
// names (the path would silently win), and PUT customfields must say which
// rows it sets: an empty body or a missing "rows" would otherwise delete
// every row of the template.
func TestBodyCannotRepeatWhatThePathNames(t *testing.T) {
	t.Parallel()
	grid, _ := customTemplates(t)
	u := newDocUser(t)
	res := u.uploadFile("b.txt", uniqText(t, 5))
	doc := strconv.FormatInt(res.DocID, 10)
	cf := fmt.Sprintf("/apiv3/pub/documents/%s/customfields/%d", doc, grid.ID)
	fid := strconv.FormatInt(u.folder.FolderID, 10)
	tests := []struct {
		name, method, path, body string
		status                   int
		detail                   string
	}{
		{name: "customfields empty body", method: "PUT", path: cf, body: "",
			status: 400, detail: "Missing required field: rows"},
		{name: "customfields empty object", method: "PUT", path: cf, body: `{}`,
			status: 400, detail: "Missing required field: rows"},
		{name: "customfields null rows", method: "PUT", path: cf, body: `{"rows": null}`,
			status: 400, detail: "Missing required field: rows"},
		{name: "customfields doc_id in body", method: "PUT", path: cf, body: `{"rows": [], "doc_id": 1}`,
			status: 400, detail: `Invalid request body: unknown field "doc_id"`},
		{name: "customfields templateId in body", method: "PUT", path: cf, body: `{"rows": [], "templateId": 1}`,
			status: 400, detail: `Invalid request body: unknown field "templateId"`},
		{name: "patch doc_id in body", method: "PATCH", path: "/apiv3/pub/documents/" + doc,
			body: `{"doc_id": 1, "description": "x"}`, status: 400, detail: `Invalid request body: unknown field "doc_id"`},
		{name: "move folder_id in body", method: "POST", path: "/apiv2/pub/folders/" + fid + "/move",
			body: `{"folder_id": 1, "new_parent_id": 0}`, status: 400, detail: `Invalid request body: unknown field "folder_id"`},
		{name: "customfields explicit empty rows", method: "PUT", path: cf, body: `{"rows": []}`, status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.body != "" {
				body = tt.body
			} else {
				body = strings.NewReader("")
			}
			r := u.do(tt.method, tt.path, body)
			if tt.status >= 400 {
				expect(t, r, tt.status, tt.detail)
			} else {
				expect(t, r, tt.status)
			}
		})
	}
}

// TestJSONBodiesAreReadStrictly: a quoted number is a wrong type (400), and a body
// nested deeper than the services decode is a 400 at the gateway, not a 500
// from the service.
func TestJSONBodiesAreReadStrictly(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	deep := `{"where":` + strings.Repeat(`{"not":`, 5000) + `{"eq":{"field":"description","value":"b"}}` +
		strings.Repeat(`}`, 5000) + `}`
	tests := []struct {
		name, method, path, body, detail string
	}{
		{name: "quoted limit", method: "POST", path: "/apiv2/pub/search", body: `{"limit":"20"}`,
			detail: `Invalid request body: invalid value for int32 field limit: "20"`},
		{name: "quoted highlight_length", method: "POST", path: "/apiv2/pub/search",
			body:   `{"where":{"fts":{"field":"content","query":"a"}},"options":{"include_highlights":true,"highlight_length":"300"}}`,
			detail: `Invalid request body: invalid value for int32 field highlight_length: "300"`},
		{name: "quoted parent_id", method: "POST", path: "/apiv2/pub/folders", body: `{"name":"x","parent_id":"0"}`,
			detail: `Invalid request body: invalid value for int64 field parent_id: "0"`},
		{name: "5000 nested clauses", method: "POST", path: "/apiv2/pub/search", body: deep,
			detail: "Invalid request body: nested too deeply (at most 256 levels)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, u.do(tt.method, tt.path, tt.body), 400, tt.detail)
		})
	}
}
