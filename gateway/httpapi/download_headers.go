package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/getkin/kin-openapi/openapi3"

	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

// downloadKind is a kind of download response, by status.
type downloadKind int

const (
	downloadWhole         downloadKind = iota // 200
	downloadPartial                           // 206
	downloadNotModified                       // 304
	downloadUnsatisfiable                     // 416
)

// responseHeader declares one header of download responses, once: the
// handler sets it from this declaration (setDownloadHeaders) and the OpenAPI
// document describes it from the same one (downloadHeaderDocs), so the two
// cannot drift apart.
type responseHeader struct {
	name string
	desc string
	// on lists the responses that carry the header.
	on []downloadKind
	// optional headers may be absent (their value is empty).
	optional bool
	schema   func() *openapi3.Schema
	value    func(hdr *documentv1.DownloadHeader) string
}

func (h responseHeader) carriedBy(k downloadKind) bool {
	for _, o := range h.on {
		if o == k {
			return true
		}
	}
	return false
}

var downloadHeaders = []responseHeader{
	{
		name: "ETag", desc: "The SHA-256 of the whole file, quoted.",
		on:     []downloadKind{downloadWhole, downloadPartial, downloadNotModified},
		schema: func() *openapi3.Schema { return openapi3.NewStringSchema().WithPattern(`^"[0-9a-f]{64}"$`) },
		value:  quotedETag,
	},
	{
		name: "Accept-Ranges", desc: "Always `bytes`.",
		on:     []downloadKind{downloadWhole, downloadPartial, downloadNotModified},
		schema: func() *openapi3.Schema { return openapi3.NewStringSchema().WithEnum("bytes") },
		value:  func(*documentv1.DownloadHeader) string { return "bytes" },
	},
	{
		name: "Last-Modified", desc: "When the file was stored.", optional: true,
		on:     []downloadKind{downloadWhole, downloadPartial, downloadNotModified},
		schema: openapi3.NewStringSchema,
		value: func(hdr *documentv1.DownloadHeader) string {
			if lm := hdr.GetLastModified(); lm != nil {
				return lm.AsTime().UTC().Format(http.TimeFormat)
			}
			return ""
		},
	},
	{
		name: "Content-Disposition", desc: "`attachment` with the description as file name (original extension kept).",
		on:     []downloadKind{downloadWhole, downloadPartial},
		schema: openapi3.NewStringSchema,
		value:  func(hdr *documentv1.DownloadHeader) string { return contentDisposition(hdr.GetFilename()) },
	},
	{
		name: "Content-Length", desc: "Bytes in this response.",
		on:     []downloadKind{downloadWhole, downloadPartial},
		schema: func() *openapi3.Schema { return openapi3.NewInt64Schema().WithMin(0) },
		value:  func(hdr *documentv1.DownloadHeader) string { return strconv.FormatInt(contentLength(hdr), 10) },
	},
	{
		name: "Content-Range", desc: "`bytes FIRST-LAST/SIZE`.",
		on:     []downloadKind{downloadPartial},
		schema: func() *openapi3.Schema { return openapi3.NewStringSchema().WithPattern(`^bytes \d+-\d+/\d+$`) },
		value: func(hdr *documentv1.DownloadHeader) string {
			return fmt.Sprintf("bytes %d-%d/%d", hdr.GetRangeFirst(), hdr.GetRangeLast(), hdr.GetSize())
		},
	},
	{
		name: "Content-Range", desc: "`bytes */SIZE`: the size of the whole file (RFC 9110).",
		on:     []downloadKind{downloadUnsatisfiable},
		schema: func() *openapi3.Schema { return openapi3.NewStringSchema().WithPattern(`^bytes \*/\d+$`) },
		value:  func(hdr *documentv1.DownloadHeader) string { return fmt.Sprintf("bytes */%d", hdr.GetSize()) },
	},
}

// setDownloadHeaders sets the declared headers of a response of kind k.
func setDownloadHeaders(h http.Header, k downloadKind, hdr *documentv1.DownloadHeader) {
	for _, d := range downloadHeaders {
		if !d.carriedBy(k) {
			continue
		}
		if v := d.value(hdr); v != "" {
			h.Set(d.name, v)
		}
	}
}

// downloadHeaderDocs describes the declared headers of a response of kind
// k for the OpenAPI document.
func downloadHeaderDocs(k downloadKind) openapi3.Headers {
	out := openapi3.Headers{}
	for _, d := range downloadHeaders {
		if d.carriedBy(k) {
			out[d.name] = header(d.desc, !d.optional, d.schema())
		}
	}
	return out
}
