package extract

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/transform"
)

// skipped elements: their content is never shown as text.
var htmlSkip = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Object: true, atom.Iframe: true, atom.Canvas: true,
}

// htmlBlock elements start and end a line of text.
var htmlBlock = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true,
	atom.Br: true, atom.Caption: true, atom.Dd: true, atom.Details: true, atom.Dialog: true,
	atom.Div: true, atom.Dl: true, atom.Dt: true, atom.Fieldset: true, atom.Figcaption: true,
	atom.Figure: true, atom.Footer: true, atom.Form: true, atom.H1: true, atom.H2: true,
	atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true, atom.Header: true,
	atom.Hr: true, atom.Li: true, atom.Main: true, atom.Nav: true, atom.Ol: true,
	atom.Option: true, atom.P: true, atom.Pre: true, atom.Section: true, atom.Summary: true,
	atom.Table: true, atom.Tbody: true, atom.Thead: true, atom.Tfoot: true, atom.Title: true,
	atom.Tr: true, atom.Ul: true, atom.Body: true, atom.Html: true, atom.Legend: true,
	atom.Textarea: true, atom.Select: true,
}

// htmlCell elements are separated by a tab within their row.
var htmlCell = map[atom.Atom]bool{atom.Td: true, atom.Th: true}

// htmlVoid elements have no end tag, so they never open a hidden subtree.
var htmlVoid = map[atom.Atom]bool{
	atom.Area: true, atom.Base: true, atom.Br: true, atom.Col: true, atom.Embed: true,
	atom.Hr: true, atom.Img: true, atom.Input: true, atom.Link: true, atom.Meta: true,
	atom.Source: true, atom.Track: true, atom.Wbr: true,
}

// extractHTML returns the visible text of an HTML document: text nodes with
// entities decoded, without script, style, template and similar content nor
// elements marked hidden, with block elements on their own lines. It streams
// through the tokenizer, so memory does not grow with the document.
func extractHTML(ctx context.Context, r io.Reader, contentType string, out *sink) error {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(1024)
	var src io.Reader
	if enc, name, _ := charset.DetermineEncoding(head, contentType); name == "utf-8" || enc == nil {
		src = textReader(br)
	} else {
		src = transform.NewReader(br, enc.NewDecoder())
	}

	z := html.NewTokenizer(src)
	// A token larger than the text the sink still takes is not read whole:
	// the tokenizer refuses it instead of buffering it.
	z.SetMaxBuf(out.remaining() + tokenSlack)
	var (
		skipTag   string // the element whose subtree is being skipped
		skipDepth int    // nesting of skipTag inside itself
	)
	for i := 0; ; i++ {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if err := z.Err(); err != io.EOF {
				if err == html.ErrBufferExceeded {
					// One token holds more text than the sink takes.
					return errTextFull
				}
				return fmt.Errorf("extract: read HTML: %w", err)
			}
			return nil
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			if skipTag != "" {
				if tok.Data == skipTag && tt == html.StartTagToken {
					skipDepth++
				}
				continue
			}
			if tt == html.StartTagToken && !htmlVoid[tok.DataAtom] && (htmlSkip[tok.DataAtom] || hiddenElement(tok)) {
				skipTag, skipDepth = tok.Data, 1
				continue
			}
			if err := htmlSeparator(tok.DataAtom, out); err != nil {
				return err
			}
		case html.EndTagToken:
			tok := z.Token()
			if skipTag != "" {
				if tok.Data == skipTag {
					skipDepth--
					if skipDepth == 0 {
						skipTag = ""
					}
				}
				continue
			}
			if err := htmlSeparator(tok.DataAtom, out); err != nil {
				return err
			}
		case html.TextToken:
			if skipTag != "" {
				continue
			}
			// Text() decodes entities; raw-text elements (script, style)
			// were skipped above.
			if err := out.WriteString(string(z.Text())); err != nil {
				return err
			}
		}
	}
}

func htmlSeparator(a atom.Atom, out *sink) error {
	switch {
	case htmlBlock[a]:
		return out.Newline()
	case htmlCell[a]:
		return out.WriteString("\t")
	case a == atom.Img || a == atom.Input:
		return out.Space()
	}
	return nil
}

// hiddenElement reports elements the page hides: the hidden attribute, or an
// inline style with display:none or visibility:hidden.
func hiddenElement(tok html.Token) bool {
	for _, a := range tok.Attr {
		switch strings.ToLower(a.Key) {
		case "hidden":
			return true
		case "style":
			s := strings.ReplaceAll(strings.ToLower(a.Val), " ", "")
			if strings.Contains(s, "display:none") || strings.Contains(s, "visibility:hidden") {
				return true
			}
		}
	}
	return false
}
