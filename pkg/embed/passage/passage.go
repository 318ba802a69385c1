// Package passage cuts a long text's tokens into overlapping windows that
// fit a transformer's input, so that a document longer than the model's
// window is embedded as several passage vectors instead of being cut off
// after its first few hundred tokens.
//
// Windows hold at most size tokens; each starts size−overlap tokens (or
// a little less) after the one before, so that a sentence cut by one
// window's end is whole in the next. Windows begin and end at word
// boundaries ("##" continuation pieces stay with their word) unless a
// single word is too long for that.
package passage

import "github.com/docrepo/docrepo/pkg/embed/wordpiece"

// Window is a run of tokens: tokens[First:Last], which came from
// text[Start:End].
type Window struct {
	First, Last int
	Start, End  int
}

// Split returns the windows of tokens: at least one (an empty window for
// no tokens), each of at most size tokens, consecutive ones sharing about
// overlap tokens, together covering every token. It panics if size < 1;
// overlap is clamped to [0, size/2].
func Split(tokens []wordpiece.Token, size, overlap int) []Window {
	if size < 1 {
		panic("passage: window size < 1")
	}
	overlap = min(max(overlap, 0), size/2)
	n := len(tokens)
	if n == 0 {
		return []Window{{}}
	}
	var out []Window
	first := 0
	for {
		last := min(first+size, n)
		if last < n {
			// Do not split a word: end before it if that keeps at least
			// half a window.
			back := last
			for back > first+size/2 && tokens[back].Continuation {
				back--
			}
			if !tokens[back].Continuation {
				last = back
			}
		}
		out = append(out, Window{First: first, Last: last, Start: tokens[first].Start, End: tokens[last-1].End})
		if last == n {
			return out
		}
		// Start the next window overlap tokens before this one's end, or
		// a little earlier at the first piece of the word there, as long
		// as that still moves forward by half the stride.
		next := last - overlap
		back, lowest := next, first+max(1, (size-overlap)/2)
		for back > lowest && tokens[back].Continuation {
			back--
		}
		if !tokens[back].Continuation {
			next = back
		}
		first = max(next, first+1)
	}
}
