package main

import (
	"fmt"
	"strings"

	"github.com/docrepo/docrepo/pkg/search/scifact"
)

// sciTexts makes any number of realistic English documents from the
// SciFact abstracts (-ingest-corpus scifact): document i is abstract
// i mod N; the first N are the abstracts as they are (title + " " +
// text), each later round r a variation of them: the title, then the
// abstract's sentences rotated by r, then one sentence of another
// abstract. Every document is distinct English prose of an abstract's
// length, and its title (the description) says which abstract it came
// from, so that claims can be judged against the corpus's qrels.
type sciTexts struct {
	docs  []scifact.Doc
	sents [][]string
}

func newSciTexts(docs []scifact.Doc) *sciTexts {
	s := &sciTexts{docs: docs, sents: make([][]string, len(docs))}
	for i, d := range docs {
		for _, p := range strings.SplitAfter(d.Text, ". ") {
			if p = strings.TrimSpace(p); p != "" {
				s.sents[i] = append(s.sents[i], p)
			}
		}
	}
	return s
}

// doc returns document i: its file name, text and title.
func (s *sciTexts) doc(i int) (name, text, title string) {
	n := len(s.docs)
	j, r := i%n, i/n
	d := s.docs[j]
	if r == 0 || len(s.sents[j]) == 0 {
		return d.ID + ".txt", d.Content(), d.Title
	}
	sents := s.sents[j]
	k := r % len(sents)
	rotated := append(append([]string{}, sents[k:]...), sents[:k]...)
	other := s.sents[(j*7+r*131)%n]
	extra := ""
	if len(other) > 0 {
		extra = " " + other[r%len(other)]
	}
	return fmt.Sprintf("%s-v%d.txt", d.ID, r), d.Title + " " + strings.Join(rotated, " ") + extra, d.Title
}
