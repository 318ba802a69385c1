package documentsvc

import (
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/google/uuid"
)

// sniffLen is how many leading bytes content sniffing looks at.
const sniffLen = 512

// extTypes maps file extensions to MIME types for formats that content
// sniffing cannot tell apart (Office files are zip or OLE2 containers,
// CSV and Markdown are plain text). The table is built in so that the
// answer never depends on the host's /etc/mime.types.
var extTypes = map[string]string{
	".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	".docm": "application/vnd.ms-word.document.macroEnabled.12",
	".dotx": "application/vnd.openxmlformats-officedocument.wordprocessingml.template",
	".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".xlsm": "application/vnd.ms-excel.sheet.macroEnabled.12",
	".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	".ppsx": "application/vnd.openxmlformats-officedocument.presentationml.slideshow",
	".odt":  "application/vnd.oasis.opendocument.text",
	".ods":  "application/vnd.oasis.opendocument.spreadsheet",
	".odp":  "application/vnd.oasis.opendocument.presentation",
	".epub": "application/epub+zip",
	".doc":  "application/msword",
	".xls":  "application/vnd.ms-excel",
	".ppt":  "application/vnd.ms-powerpoint",
	".msg":  "application/vnd.ms-outlook",
	".vsdx": "application/vnd.ms-visio.drawing",
	".csv":  "text/csv; charset=utf-8",
	".tsv":  "text/tab-separated-values; charset=utf-8",
	".md":   "text/markdown; charset=utf-8",
	".json": "application/json",
	".yaml": "application/yaml",
	".yml":  "application/yaml",
	".eml":  "message/rfc822",
	".rtf":  "application/rtf",
	".svg":  "image/svg+xml",
	".heic": "image/heic",
	".tif":  "image/tiff",
	".tiff": "image/tiff",
	".7z":   "application/x-7z-compressed",
	".dwg":  "image/vnd.dwg",
	".pdf":  "application/pdf",
	".txt":  "text/plain; charset=utf-8",
}

// genericSniffs are the sniffed types that say little: the extension, when
// known, says more. The value restricts which extension types may replace
// the sniffed one (nil: any).
var genericSniffs = map[string]func(extType string) bool{
	"application/octet-stream": nil,
	"application/zip": func(t string) bool {
		return strings.Contains(t, "openxmlformats") || strings.Contains(t, "opendocument") ||
			strings.Contains(t, "ms-") || t == "application/epub+zip"
	},
	"text/plain; charset=utf-8": func(t string) bool {
		return strings.HasPrefix(t, "text/") || t == "application/json" || t == "application/yaml" ||
			t == "message/rfc822" || t == "application/rtf"
	},
	"text/plain; charset=utf-16be": func(t string) bool { return strings.HasPrefix(t, "text/") },
	"text/plain; charset=utf-16le": func(t string) bool { return strings.HasPrefix(t, "text/") },
	"text/xml; charset=utf-8":      func(t string) bool { return t == "image/svg+xml" },
}

// DetectType decides a file's MIME type: the client's declared type unless
// it is empty, unparsable or application/octet-stream; otherwise the type
// sniffed from the first bytes (http.DetectContentType), refined by the
// filename's extension where sniffing only sees a container or plain text.
func DetectType(declared, filename string, head []byte) string {
	if mt, params, err := mime.ParseMediaType(declared); err == nil && mt != "application/octet-stream" &&
		len(declared) <= maxContentType && strings.Contains(mt, "/") {
		if v := mime.FormatMediaType(mt, params); v != "" {
			return v
		}
	}
	if len(head) > sniffLen {
		head = head[:sniffLen]
	}
	sniffed := http.DetectContentType(head)
	allowed, generic := genericSniffs[sniffed]
	if !generic {
		return sniffed
	}
	if t, ok := extTypes[strings.ToLower(path.Ext(filename))]; ok && (allowed == nil || allowed(t)) {
		return t
	}
	return sniffed
}

// storageExt is the extension kept in a generated storage name: the
// original extension, lower-cased, when it is 1 to 10 letters and digits.
func storageExt(filename string) string {
	ext := strings.ToLower(path.Ext(filename))
	if len(ext) < 2 || len(ext) > 11 {
		return ""
	}
	for _, c := range ext[1:] {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return ""
		}
	}
	return ext
}

// newStorageName returns a fresh image_name (a UUID plus the sanitised
// extension) and the blob key it is stored under. Nothing of the client's
// filename but a checked extension reaches either.
func newStorageName(filename string) (imageName, key string) {
	id := uuid.New().String()
	imageName = id + storageExt(filename)
	return imageName, "files/" + id[:2] + "/" + imageName
}
