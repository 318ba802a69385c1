package embed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/docrepo/docrepo/pkg/embed/glove"
	"github.com/docrepo/docrepo/pkg/embed/wordnet"
)

// Query-time synonym expansion (issue 20's paraphrases): a query's words
// and phrases that WordNet holds bring their synonyms, abbreviations and
// collocations ("car": automobile, auto; "usa": united states of america;
// "high blood pressure": hypertension) into the query side only (the
// documents and the index are unchanged): into the lexical part (a
// paraphrase shares no word with its document, its synonym often does),
// the GloVe part (the synonyms' mean added to the query's) and the second
// stage's word alignment (each query word aligns with its synonyms' words
// as well). See USEConfig's Synonym fields and docs/benchmarks.md §5.

// Thesaurus answers the synonyms of a word or phrase (lowercased, words
// separated by spaces): wordnet.WordNet with a sense selection.
type Thesaurus interface {
	// Lemma says whether phrase (or a base form of it) is an entry,
	// with or without synonyms.
	Lemma(phrase string) bool
	// Synonyms returns phrase's synonyms, nil when there are none.
	Synonyms(phrase string) []string
	// MaxWords is the most words an entry has.
	MaxWords() int
}

// DefaultUSEWordNetDirName is WordNet's directory name beside the
// sentence encoder's (deploy/dev/wordnet.sh dir).
const DefaultUSEWordNetDirName = "wordnet-3.0-37"

// wordNetThesaurus is WordNet with the senses that answer, and whether
// the adjectives pertaining to a noun answer too.
type wordNetThesaurus struct {
	wn         *wordnet.WordNet
	senses     wordnet.Senses
	pertainyms bool
	// hypernyms: a sense without synonyms answers its direct hypernyms'
	// lemmas (measured in TestUSESynonymTune, not a setting).
	hypernyms bool
}

func (t wordNetThesaurus) Lemma(phrase string) bool { _, ok := t.wn.Lemma(phrase); return ok }
func (t wordNetThesaurus) Synonyms(phrase string) []string {
	out := t.wn.Synonyms(phrase, t.senses)
	if t.hypernyms {
		for _, h := range t.wn.Hypernyms(phrase, t.senses) {
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	if t.pertainyms {
		for _, p := range t.wn.Pertainyms(phrase, t.senses) {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}
func (t wordNetThesaurus) MaxWords() int { return t.wn.MaxWords() }

// NewWordNetThesaurus is wn answering with the senses which selects
// (and, with pertainyms, the adjectives that pertain to a noun: kidney,
// renal).
func NewWordNetThesaurus(wn *wordnet.WordNet, which wordnet.Senses, pertainyms bool) Thesaurus {
	return wordNetThesaurus{wn: wn, senses: which, pertainyms: pertainyms}
}

// loadWordNet opens WordNet in dir ("": DefaultUSEWordNetDirName beside
// the sentence encoder's directory useDir; "none": none); an error says
// why there is none.
func loadWordNet(dir, useDir string) (*wordnet.WordNet, error) {
	dir = strings.TrimSpace(dir)
	switch {
	case strings.EqualFold(dir, "none"):
		return nil, errors.New("DOCREPO_USE_WORDNET_DIR=none")
	case dir == "":
		dir = filepath.Join(filepath.Dir(useDir), DefaultUSEWordNetDirName)
	}
	if _, err := os.Stat(filepath.Join(dir, "index.noun")); err != nil {
		return nil, fmt.Errorf("WordNet: %w (deploy/dev/wordnet.sh ensure fetches it)", err)
	}
	return wordnet.Open(dir)
}

// synUnit is a word or phrase of a query that the thesaurus holds: its
// words (tokenize's) and its synonyms.
type synUnit struct {
	words    []string
	synonyms []string
}

// maxSynonymWords bounds the phrases looked up (WordNet's longest lemma
// has 9 words; queries' phrases are short).
const maxSynonymWords = 4

// querySynonyms splits text into the thesaurus's entries with synonyms,
// longest first from the left: a phrase that is an entry with synonyms
// takes its words ("high blood pressure": hypertension, not high + blood
// + pressure); one without synonyms does not, its words are looked up
// alone or in shorter phrases ("liver disease": liver, hepatic). A
// single stop word is no entry, nor a phrase that begins or ends with
// one.
func querySynonyms(th Thesaurus, text string) []synUnit {
	if th == nil {
		return nil
	}
	toks := tokenize(text, maxHashTokens)
	longest := min(th.MaxWords(), maxSynonymWords)
	var out []synUnit
	for i := 0; i < len(toks); {
		taken := 1
		for n := min(longest, len(toks)-i); n >= 1; n-- {
			span := toks[i : i+n]
			if stopWords[span[0]] || stopWords[span[n-1]] {
				continue
			}
			phrase := strings.Join(span, " ")
			if !th.Lemma(phrase) {
				continue
			}
			if syns := th.Synonyms(phrase); len(syns) > 0 {
				out = append(out, synUnit{words: span, synonyms: syns})
				taken = n
				break
			}
		}
		i += taken
	}
	return out
}

// synonymsOf returns query's synonym units when u expands it (a
// thesaurus, and at most synonymWords content words).
func (u *USE) synonymsOf(query string) []synUnit {
	if u.thesaurus == nil || u.synonymWords <= 0 {
		return nil
	}
	if n := contentWords(query, u.synonymWords+1); n == 0 || n > u.synonymWords {
		return nil
	}
	return querySynonyms(u.thesaurus, query)
}

// synonymText joins units' synonyms into one text whose phrases are kept
// apart for the lexical part's word pairs (a stop word between them
// breaks a pair).
func synonymText(units []synUnit) string {
	var b strings.Builder
	for _, s := range units {
		for _, syn := range s.synonyms {
			if b.Len() > 0 {
				b.WriteString(" and ")
			}
			b.WriteString(syn)
		}
	}
	return b.String()
}

// synonymWordsOf returns the content words of units' synonyms that are
// not among words, each once.
func synonymWordsOf(units []synUnit, words []string) []string {
	seen := map[string]bool{}
	for _, w := range words {
		seen[w] = true
	}
	var out []string
	for _, w := range queryWords(synonymText(units)) {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// The expansion's defaults (USEConfig's Synonym fields).
const (
	DefaultUSESynonymSenses        = "top"
	DefaultUSESynonymQueryWords    = 3
	DefaultUSESynonymLexicalWeight = 0.2
	DefaultUSESynonymOwnWeight     = 0
	DefaultUSESynonymLongWeight    = 0
	DefaultUSESynonymGloVeWeight   = 0.3
	DefaultUSESynonymRerankWeight  = 1
	DefaultUSESynonymPertainyms    = true
)

// synonymSenses parses USEConfig.SynonymSenses.
func synonymSenses(s string) (wordnet.Senses, error) {
	if strings.TrimSpace(s) == "" {
		s = DefaultUSESynonymSenses
	}
	which, err := wordnet.ParseSenses(s)
	if err != nil {
		return 0, fmt.Errorf("%w: use synonym senses: %v", ErrConfig, err)
	}
	return which, nil
}

// WordNetStatus says whether queries are expanded with synonyms, and
// when that was wanted but WordNet is not there, why.
func (u *USE) WordNetStatus() (bool, error) { return u.thesaurus != nil, u.thesaurusErr }

// addSynonymGloVe replaces the GloVe part of v (query q's blended
// vector) by the unit mean of q's GloVe vector and SynonymGloVeWeight
// times its synonyms', at the part's length.
func (u *USE) addSynonymGloVe(v []float32, q string, units []synUnit) {
	sv := u.gloveVector(synonymText(units))
	if sv == nil {
		return
	}
	qv := u.gloveVector(q)
	m := make([]float32, len(sv))
	for d := range m {
		m[d] = float32(u.synGloVe) * sv[d]
		if qv != nil {
			m[d] += qv[d]
		}
	}
	if !glove.Normalize(m) {
		return
	}
	for d, x := range m {
		v[u.gloveOff+d] = u.gw * x
	}
}
