package extract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// textReader returns r decoded to UTF-8: a UTF-16 byte order mark selects
// UTF-16, a UTF-8 one is dropped. Bytes that are not valid UTF-8 are taken
// as Windows-1252 (the usual legacy encoding of stray 8-bit text), so no text
// is lost to invalid bytes.
func textReader(r io.Reader) io.Reader {
	br := bufio.NewReaderSize(r, 64<<10)
	bom, _ := br.Peek(3)
	switch {
	case bytes.HasPrefix(bom, []byte{0xFF, 0xFE}):
		return transform.NewReader(br, unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder())
	case bytes.HasPrefix(bom, []byte{0xFE, 0xFF}):
		return transform.NewReader(br, unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder())
	case bytes.HasPrefix(bom, []byte{0xEF, 0xBB, 0xBF}):
		_, _ = br.Discard(3)
	}
	return transform.NewReader(br, lenientUTF8{})
}

// lenientUTF8 passes valid UTF-8 through and decodes each invalid byte as
// Windows-1252.
type lenientUTF8 struct{ transform.NopResetter }

var cp1252 = charmap.Windows1252

func (lenientUTF8) Transform(dst, src []byte, atEOF bool) (nDst, nSrc int, err error) {
	for nSrc < len(src) {
		c := src[nSrc]
		if c < utf8.RuneSelf {
			if nDst >= len(dst) {
				return nDst, nSrc, transform.ErrShortDst
			}
			dst[nDst] = c
			nDst++
			nSrc++
			continue
		}
		r, size := utf8.DecodeRune(src[nSrc:])
		if r == utf8.RuneError && size == 1 {
			if !atEOF && !utf8.FullRune(src[nSrc:]) {
				return nDst, nSrc, transform.ErrShortSrc
			}
			r = cp1252.DecodeByte(c)
			if r == utf8.RuneError || r == 0 {
				r = '\uFFFD'
			}
		}
		if nDst+utf8.RuneLen(r) > len(dst) {
			return nDst, nSrc, transform.ErrShortDst
		}
		nDst += utf8.EncodeRune(dst[nDst:], r)
		nSrc += size
	}
	return nDst, nSrc, nil
}

// extractPlain copies text as it is (cleaned by the sink).
func extractPlain(ctx context.Context, r io.Reader, out *sink) error {
	tr := textReader(r)
	buf := make([]byte, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := tr.Read(buf)
		if n > 0 {
			// The decoder emits whole runes only.
			if werr := out.WriteString(string(buf[:n])); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("extract: read text: %w", err)
		}
	}
}

// extractXML returns the character data of an XML document, one element's
// text per line. Malformed XML falls back to the plain text of the file (tags
// included), which still indexes its words.
func extractXML(ctx context.Context, r io.ReaderAt, size int64, opts Options, out *sink) error {
	dec := xml.NewDecoder(boundedTokens(textReader(io.NewSectionReader(r, 0, size)), out))
	dec.Strict = false
	dec.AutoClose = xml.HTMLAutoClose
	dec.Entity = xml.HTMLEntity
	dec.CharsetReader = charsetReader
	written := false
	for i := int64(0); ; i++ {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if i >= opts.MaxMarkupTokens {
			return errMarkupTokens
		}
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if written {
				return nil // keep what was read before the damage
			}
			return extractPlain(ctx, io.NewSectionReader(r, 0, size), out)
		}
		switch t := tok.(type) {
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				written = true
				if err := out.WriteString(string(t)); err != nil {
					return err
				}
			}
		case xml.EndElement, xml.StartElement:
			if err := out.Newline(); err != nil {
				return err
			}
		}
	}
}

// extractJSON returns the string values (and object keys) of a JSON
// document, one per line; numbers, booleans and punctuation are left out.
// Malformed JSON falls back to plain text.
func extractJSON(ctx context.Context, r io.ReaderAt, size int64, out *sink) error {
	dec := json.NewDecoder(textReader(io.NewSectionReader(r, 0, size)))
	dec.UseNumber()
	written := false
	for i := 0; ; i++ {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if written {
				return nil
			}
			return extractPlain(ctx, io.NewSectionReader(r, 0, size), out)
		}
		var s string
		switch t := tok.(type) {
		case string:
			s = t
		case json.Number:
			s = t.String()
		default:
			continue
		}
		{
			written = true
			if err := out.WriteString(s); err != nil {
				return err
			}
			if err := out.Newline(); err != nil {
				return err
			}
		}
	}
}

// charsetReader accepts any declared encoding: textReader has already turned
// the bytes into UTF-8 (legacy 8-bit bytes as Windows-1252, a superset of the
// usual ISO-8859-1 declaration).
func charsetReader(_ string, r io.Reader) (io.Reader, error) { return r, nil }
