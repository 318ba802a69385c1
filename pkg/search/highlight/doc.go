// Package highlight builds the highlight snippets of search results (docs/api.md
// §4.8, docs/design.md §6), shared by both search engines so that they present
// matches the same way.
//
// A snippet is HTML: matched text is wrapped in <b>…</b> and every other
// character is HTML-escaped (so a "<script>" in a document comes out as
// "&lt;script&gt;"). Its length is measured in visible characters: the
// Unicode code points of the unescaped text, so tags count zero and an
// entity such as "&lt;" counts one. A result carries at most MaxSnippets
// snippets, each of at most the requested number of visible characters.
//
// Snippets builds snippets from a document's text and the byte ranges of the
// matches (the embedded engine finds them by re-analysing the stored
// content). Clip enforces the visible-length limit on a snippet that already
// contains <b> tags and escaped text (for example one produced by
// OpenSearch's highlighter with the html encoder), and VisibleLen measures
// one.
//
// Snippet selection: the matches are grouped into windows of at most the
// limit; up to MaxSnippets windows holding the most matches are chosen
// (earlier first on ties), shown in document order, and each is widened
// with surrounding context up to the limit, split evenly before and after
// and cut at word boundaries where possible. Control characters (newlines,
// tabs) are shown as spaces. A match longer than the limit is cut. Without
// matches there are no snippets.
package highlight
