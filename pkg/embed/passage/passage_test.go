package passage

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed/wordpiece"
)

// words makes tokens from a pattern: each letter is a token, "+" before
// a letter marks a continuation piece. "a b+c" is a word "a" and a word of
// two pieces "b", "##c". Spans are those of the letters in the pattern.
func words(pattern string) []wordpiece.Token {
	var out []wordpiece.Token
	cont := false
	for i, r := range pattern {
		switch r {
		case ' ':
		case '+':
			cont = true
		default:
			out = append(out, wordpiece.Token{ID: int32(i), Start: i, End: i + 1, Continuation: cont})
			cont = false
		}
	}
	return out
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name          string
		pattern       string
		size, overlap int
		want          [][2]int // First, Last of each window
	}{
		{"empty", "", 4, 1, [][2]int{{0, 0}}},
		{"fits", "a b c", 4, 1, [][2]int{{0, 3}}},
		{"exactly one window", "a b c d", 4, 1, [][2]int{{0, 4}}},
		{"plain words", "a b c d e f g h i j", 4, 1, [][2]int{{0, 4}, {3, 7}, {6, 10}}},
		{"no overlap", "a b c d e f g h", 4, 0, [][2]int{{0, 4}, {4, 8}}},
		{"half overlap", "a b c d e f g h", 4, 2, [][2]int{{0, 4}, {2, 6}, {4, 8}}},
		{"overlap clamped to half", "a b c d e f g h", 4, 9, [][2]int{{0, 4}, {2, 6}, {4, 8}}},
		{"window end moves before a split word", "a b c d +e f g h", 4, 1, [][2]int{{0, 3}, {2, 6}, {5, 8}}},
		{"window start moves to the word's start", "a b c+d e f g h", 8, 2, [][2]int{{0, 8}}},
		{"window start moves back to the word's start", "a b+c+d e f g h i j", 5, 2, [][2]int{{0, 5}, {1, 6}, {4, 9}, {7, 10}}},
		{"but not by more than half the stride", "a b+c+d+e+f+g h i j k l", 8, 3, [][2]int{{0, 8}, {5, 12}}},
		{"window end moves back at most half a window", "a b c d+e+f+g h i j", 6, 1, [][2]int{{0, 3}, {2, 8}, {7, 10}}},
		{"word longer than half a window is cut", "a+b+c+d+e+f+g+h", 4, 1, [][2]int{{0, 4}, {3, 7}, {6, 8}}},
		{"size one", "a b c", 1, 0, [][2]int{{0, 1}, {1, 2}, {2, 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			toks := words(tc.pattern)
			ws := Split(toks, tc.size, tc.overlap)
			var got [][2]int
			for _, w := range ws {
				got = append(got, [2]int{w.First, w.Last})
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("windows %v, want %v", got, tc.want)
			}
			checkWindows(t, toks, ws, tc.size)
		})
	}
}

// checkWindows checks the invariants of any split.
func checkWindows(t *testing.T, toks []wordpiece.Token, ws []Window, size int) {
	t.Helper()
	if len(ws) == 0 {
		t.Fatal("no windows")
	}
	covered := 0
	for i, w := range ws {
		if w.Last-w.First > size {
			t.Errorf("window %d has %d tokens, more than %d", i, w.Last-w.First, size)
		}
		if w.First > covered {
			t.Errorf("tokens %d..%d are in no window", covered, w.First)
		}
		if i > 0 && w.First <= ws[i-1].First {
			t.Errorf("window %d does not move forward", i)
		}
		if len(toks) > 0 && (w.Start != toks[w.First].Start || w.End != toks[w.Last-1].End) {
			t.Errorf("window %d span [%d,%d) does not match its tokens", i, w.Start, w.End)
		}
		covered = max(covered, w.Last)
	}
	if covered != len(toks) {
		t.Errorf("windows cover %d of %d tokens", covered, len(toks))
	}
}

func TestSplitLongTexts(t *testing.T) {
	for _, n := range []int{1, 255, 256, 257, 1000, 4321} {
		for _, size := range []int{16, 254} {
			var b strings.Builder
			for i := range n {
				if i%7 == 3 {
					b.WriteString("+") // some words of two pieces
				} else {
					b.WriteString(" ")
				}
				b.WriteString("x")
			}
			toks := words(b.String())
			t.Run(fmt.Sprintf("n=%d size=%d", n, size), func(t *testing.T) {
				ws := Split(toks, size, size/4)
				checkWindows(t, toks, ws, size)
				for i, w := range ws {
					if w.First > 0 && toks[w.First].Continuation {
						t.Errorf("window %d starts inside a word", i)
					}
					if w.Last < len(toks) && toks[w.Last].Continuation {
						t.Errorf("window %d ends inside a word", i)
					}
				}
				// Stride is about size - overlap: the count of windows is
				// close to what that implies.
				if want := (n - size/4 + (size - size/4) - 1) / (size - size/4); n > size && (len(ws) < want || len(ws) > want*5/4+1) {
					t.Errorf("%d windows, expected about %d", len(ws), want)
				}
			})
		}
	}
}
