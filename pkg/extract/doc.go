// Package extract turns uploaded files into plain text for the search index,
// and counts PDF pages for the upload path.
//
// Extract reads through an io.ReaderAt, as blob stores serve files: a PDF's
// objects, a DOCX's zip entries and text files are read where they lie, and
// only what is being decoded is in memory (the PDF parser keeps the file's
// compressed streams, so PDFs are capped by Options.MaxPDFBytes). The format
// comes from the content's signature first, then the declared MIME type,
// then the original filename's extension (the name is never opened).
//
// Formats:
//
//   - PDF: github.com/pdfcpu/pdfcpu parses the file (xref tables and
//     streams, object streams, filters, encryption with an empty user
//     password, repair of damaged xrefs) and counts pages from the page
//     tree, which matches poppler's pdfinfo. Text comes from this package's
//     own content-stream interpreter: fonts (simple encodings with
//     Differences, embedded Type 1 encodings, ToUnicode CMaps, composite
//     fonts with Identity or embedded CMaps, Type 3), text and graphics
//     state, form XObjects. Glyph positions, not space characters, decide
//     word breaks (a gap over 0.1 em, as in pdftotext); fragments of lines
//     are put in reading order by recursive XY cuts, so columns and tables
//     read as they do in pdftotext; words hyphenated at a line end are
//     joined. On the real-world test documents the text agrees with
//     pdftotext on 99% of word bigrams. The pure-Go extractors tried first
//     found fewer of the manifest's phrases (ledongthuc/pdf 15 of 26,
//     dslipak/pdf 6, rsc.io/pdf 0) because they rely on space characters
//     and content order, and rsc.io/pdf cannot open several of the files.
//     Pages without a usable text layer (no letters or digits, or mostly
//     replacement, private-use and symbol characters, as broken font
//     encodings give; or a page that is one image with fewer than 16
//     letters and digits of text, a stamp such as a page number added to
//     a scan) go to Options.OCR when it is set, rendered at
//     Options.OCRDPI or the page's scan resolution when lower (not below
//     200 dpi), at a lower resolution when the page would exceed
//     Options.OCRMaxPixels; their OCR text replaces the page's text, in
//     page order, so a mixed PDF keeps its text layer where it has one.
//     A page drawing an image XObject of more than four times the pixel
//     limit is refused before it is rendered.
//   - DOCX: the main document part (found through the package
//     relationships), then headers, footers, footnotes, endnotes and
//     comments; paragraphs and table cells end lines; deleted revisions,
//     field codes and the legacy duplicates in mc:Fallback are left out.
//   - HTML: visible text only (golang.org/x/net/html tokenizer, entities
//     decoded, declared charsets honoured); script, style, template,
//     noscript and elements marked hidden are skipped; block elements end
//     lines.
//   - Plain text, Markdown, CSV: as is. UTF-16 with a byte order mark is
//     decoded; bytes that are not valid UTF-8 are read as Windows-1252, so
//     legacy text keeps its words.
//   - XML: character data; JSON: keys, string values and numbers. Both fall
//     back to plain text when malformed.
//   - Images (PNG, JPEG, TIFF with all its pages, WebP, GIF, BMP, known by
//     their signatures only): the pixel size of every page is read from the
//     headers (a TIFF's directories are walked) and checked against
//     Options.OCRMaxPixels before anything is decoded, then the pages go to
//     Options.OCR; without it they give no text.
//   - Anything else (archives, unknown binaries): empty text and no
//     error, so an upload is never refused for being unindexable.
//
// OCR never makes Extract fail: a refused or failed page is counted in
// Result.OCRFailed with the first reason in Result.OCRErr (ErrOCRLimit for
// the page and pixel limits), and the text that could be read is returned.
// Result.Source says whether any text came from OCR. OCR runs outside
// Options.Timeout; the OCR implementation bounds its own time.
//
// The text is normalised for indexing: valid UTF-8, no control characters,
// runs of spaces and tabs become one space, lines end with "\n", at most
// one empty line separates paragraphs, and a form feed separates PDF pages.
//
// Safety: no panic escapes (parsers run under recover and panics become
// errors wrapping ErrMalformed); every inflated byte counts against
// Options.MaxDecompressedBytes and exceeding it is ErrLimit (zip and flate
// bombs); the text is capped at Options.MaxTextBytes (Result.Truncated);
// recursion through page trees and forms is bounded and cycle-checked; reads
// fail as soon as ctx is done, and the loops check ctx, so cancellation and
// Options.Timeout end an extraction promptly.
package extract
