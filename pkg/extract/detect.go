package extract

import (
	"archive/zip"
	"bytes"
	"io"
	"mime"
	"path"
	"strings"
	"unicode/utf8"
)

// sniffLen is how many leading bytes detection looks at.
const sniffLen = 8192

// mimeFormats maps MIME types (lowercase, without parameters) to formats.
var mimeFormats = map[string]Format{
	"application/pdf":   FormatPDF,
	"application/x-pdf": FormatPDF,
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document": FormatDOCX,
	"application/vnd.ms-word.document.macroenabled.12":                        FormatDOCX,
	"text/html":                 FormatHTML,
	"application/xhtml+xml":     FormatHTML,
	"text/xml":                  FormatXML,
	"application/xml":           FormatXML,
	"image/svg+xml":             FormatXML,
	"application/json":          FormatJSON,
	"application/ld+json":       FormatJSON,
	"text/csv":                  FormatCSV,
	"text/tab-separated-values": FormatCSV,
	"text/markdown":             FormatMarkdown,
	"text/x-markdown":           FormatMarkdown,
	"text/plain":                FormatText,
}

// extFormats maps lowercase file extensions to formats.
var extFormats = map[string]Format{
	".pdf":      FormatPDF,
	".docx":     FormatDOCX,
	".docm":     FormatDOCX,
	".html":     FormatHTML,
	".htm":      FormatHTML,
	".xhtml":    FormatHTML,
	".xml":      FormatXML,
	".svg":      FormatXML,
	".json":     FormatJSON,
	".csv":      FormatCSV,
	".tsv":      FormatCSV,
	".md":       FormatMarkdown,
	".markdown": FormatMarkdown,
	".txt":      FormatText,
	".text":     FormatText,
	".log":      FormatText,
	".rst":      FormatText,
	".ini":      FormatText,
	".yaml":     FormatText,
	".yml":      FormatText,
	".toml":     FormatText,
}

// Detect decides how content with the given declared MIME type, original
// filename and leading bytes (head, up to a few KiB) is read. Signatures in
// the content win (a PDF uploaded as application/octet-stream is still a
// PDF; a "PDF" that does not start like one is not parsed as one); then the
// declared type, then the filename's extension; text-looking content with no
// usable type is read as plain text, anything else is FormatBinary. A zip
// archive is only known to be DOCX when it is declared so; Extract also looks
// inside the archive.
func Detect(mimeType, filename string, head []byte) Format {
	declared := declaredFormat(mimeType, filename)
	if f := imageFormat(head); f != "" {
		return f
	}
	switch {
	case isPDF(head):
		return FormatPDF
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		if declared == FormatDOCX {
			return FormatDOCX
		}
		return FormatBinary
	case declared == FormatDOCX || declared == FormatPDF:
		// Declared as a container format but not one: read it as text if it
		// looks like text (a mislabelled file), else give up quietly.
		if looksLikeText(head) {
			return FormatText
		}
		return FormatBinary
	case declared != "":
		if looksLikeText(head) {
			return declared
		}
		return FormatBinary
	}
	if looksLikeText(head) {
		trimmed := bytes.TrimLeft(head, " \t\r\n\ufeff")
		lower := bytes.ToLower(trimmed[:min(len(trimmed), 512)])
		switch {
		case bytes.HasPrefix(lower, []byte("<!doctype html")) || bytes.Contains(lower, []byte("<html")):
			return FormatHTML
		case bytes.HasPrefix(lower, []byte("<?xml")):
			return FormatXML
		}
		return FormatText
	}
	return FormatBinary
}

// detect is Detect plus a look into zip archives: an archive holding
// word/document.xml is DOCX whatever it was declared as.
func detect(mimeType, filename string, head []byte, r io.ReaderAt, size int64) Format {
	f := Detect(mimeType, filename, head)
	if bytes.HasPrefix(head, []byte("PK\x03\x04")) {
		if zr, err := zip.NewReader(r, size); err == nil {
			for _, zf := range zr.File {
				if zf.Name == "word/document.xml" {
					return FormatDOCX
				}
			}
		}
		return FormatBinary
	}
	return f
}

func declaredFormat(mimeType, filename string) Format {
	if mt, _, err := mime.ParseMediaType(mimeType); err == nil {
		if f, ok := mimeFormats[mt]; ok {
			return f
		}
		if strings.HasPrefix(mt, "text/") {
			return FormatText
		}
		if strings.HasSuffix(mt, "+xml") {
			return FormatXML
		}
		if strings.HasSuffix(mt, "+json") {
			return FormatJSON
		}
	}
	// The name is only looked at, never opened: path.Ext of its last
	// element, whatever separators it contains.
	name := filename[strings.LastIndexAny(filename, `/\`)+1:]
	if f, ok := extFormats[strings.ToLower(path.Ext(name))]; ok {
		return f
	}
	return ""
}

// isPDF reports a PDF header in the first KiB (where readers look for it).
func isPDF(head []byte) bool {
	return bytes.Contains(head[:min(len(head), 1024)], []byte("%PDF-"))
}

// looksLikeText reports whether head is text: UTF-16 with a BOM, or with no
// NUL bytes and few control characters. Invalid UTF-8 is tolerated (legacy
// 8-bit text) as long as most of it decodes.
func looksLikeText(head []byte) bool {
	if len(head) == 0 {
		return true
	}
	if bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF}) {
		return true
	}
	var ctrl, bad, total int
	for i := 0; i < len(head); {
		r, size := utf8.DecodeRune(head[i:])
		i += size
		total++
		switch {
		case r == 0:
			return false
		case r == utf8.RuneError && size == 1:
			// A rune cut at the end of head is not evidence of binary.
			if len(head)-i+size >= utf8.UTFMax {
				bad++
			}
		case r < 0x20 && r != '\n' && r != '\r' && r != '\t' && r != '\f' && r != 0x1b:
			ctrl++
		}
	}
	// A stray control character or invalid byte in a short text is no
	// evidence of binary; many are.
	return ctrl <= 1+total/20 && bad <= 1+total/10
}
