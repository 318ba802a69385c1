package extract

import (
	"archive/zip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
)

// docxMaxEntries bounds the archive's directory; real documents have dozens.
const docxMaxEntries = 10000

// extractDOCX returns the text of a WordprocessingML document: the main
// document part (found through the package relationships, normally
// word/document.xml), then headers, footers, footnotes, endnotes and
// comments. Paragraphs, table cells and rows end a line, tabs separate
// words, deleted revisions and field codes are left out.
//
// The archive is read through its central directory with io.ReaderAt, one
// part at a time; every inflated byte counts against
// Options.MaxDecompressedBytes, so a zip bomb stops with ErrLimit instead of
// filling memory, and every XML token against Options.MaxMarkupTokens, so
// one of empty elements stops before it costs minutes of CPU.
func extractDOCX(ctx context.Context, r io.ReaderAt, size int64, opts Options, out *sink) error {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return fmt.Errorf("%w: DOCX: %v", ErrMalformed, err)
	}
	if len(zr.File) > docxMaxEntries {
		return fmt.Errorf("%w: DOCX has %d entries", ErrLimit, len(zr.File))
	}
	files := make(map[string]*zip.File, len(zr.File))
	for _, f := range zr.File {
		files[strings.TrimPrefix(f.Name, "/")] = f
	}
	budget, tokens := opts.MaxDecompressedBytes, opts.MaxMarkupTokens

	main := docxMainPart(files, &budget)
	if files[main] == nil {
		return fmt.Errorf("%w: DOCX without %s", ErrMalformed, main)
	}
	parts := []string{main}
	dir := path.Dir(main)
	// Then the other story parts, kind by kind.
	kinds := []string{"header", "footer", "footnotes", "endnotes", "comments"}
	var extra []string
	for _, kind := range kinds {
		var names []string
		for name := range files {
			base := path.Base(name)
			if path.Dir(name) == dir && strings.HasPrefix(base, kind) && strings.HasSuffix(base, ".xml") {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		extra = append(extra, names...)
	}
	parts = append(parts, extra...)

	for i, name := range parts {
		if i > 0 {
			if err := out.Paragraph(); err != nil {
				return err
			}
		}
		if err := docxPart(ctx, files[name], &budget, &tokens, out); err != nil {
			if i > 0 && errors.Is(err, ErrMalformed) {
				continue // a damaged header is not worth losing the body for
			}
			return err
		}
	}
	return nil
}

// docxMainPart finds the officeDocument target in _rels/.rels.
func docxMainPart(files map[string]*zip.File, budget *int64) string {
	const def = "word/document.xml"
	f := files["_rels/.rels"]
	if f == nil {
		return def
	}
	rc, err := f.Open()
	if err != nil {
		return def
	}
	defer rc.Close()
	var rels struct {
		Rel []struct {
			Type   string `xml:"Type,attr"`
			Target string `xml:"Target,attr"`
		} `xml:"Relationship"`
	}
	if xml.NewDecoder(&limitedReader{r: rc, budget: budget}).Decode(&rels) != nil {
		return def
	}
	for _, rel := range rels.Rel {
		if strings.HasSuffix(rel.Type, "/officeDocument") {
			target := strings.TrimPrefix(path.Clean("/"+rel.Target), "/")
			if files[target] != nil {
				return target
			}
		}
	}
	return def
}

// docxPart streams one WordprocessingML part into out; budget and tokens
// are the inflated bytes and markup tokens left.
func docxPart(ctx context.Context, f *zip.File, budget, tokens *int64, out *sink) error {
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("%w: DOCX part %s: %v", ErrMalformed, f.Name, err)
	}
	defer rc.Close()
	dec := xml.NewDecoder(boundedTokens(&limitedReader{r: rc, budget: budget}, out))
	dec.Strict = false

	// Depth counters for elements whose content is not document text.
	var inText, skip int
	for i := 0; ; i++ {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if *tokens--; *tokens < 0 {
			return errMarkupTokens
		}
		tok, err := dec.RawToken()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if errors.Is(err, ErrLimit) || errors.Is(err, errTextFull) || ctx.Err() != nil {
				return err
			}
			return fmt.Errorf("%w: DOCX part %s: %v", ErrMalformed, f.Name, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "t":
				inText++
			case "delText", "instrText", "Fallback", "delInstrText":
				// Deleted text, field codes and the legacy duplicate of
				// drawing content are not what the reader sees.
				skip++
			case "tab", "ptab":
				if skip == 0 {
					err = out.WriteString("\t")
				}
			case "br", "cr":
				if skip == 0 {
					err = out.Newline()
				}
			case "noBreakHyphen":
				if skip == 0 {
					err = out.WriteString("-")
				}
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = max(0, inText-1)
			case "delText", "instrText", "Fallback", "delInstrText":
				skip = max(0, skip-1)
			case "p", "tr":
				if skip == 0 {
					err = out.Newline()
				}
			case "tc":
				if skip == 0 {
					err = out.WriteString("\t")
				}
			}
		case xml.CharData:
			if inText > 0 && skip == 0 {
				err = out.WriteString(string(t))
			}
		}
		if err != nil {
			return err
		}
	}
}
