// Package wordnet reads Princeton WordNet 3.0's database files (as
// Debian's wordnet-base package installs them: index.{noun,verb,adj,adv},
// data.{noun,verb,adj,adv}, the exception lists {noun,verb,adj,adv}.exc
// and the sense tag counts cntlist.rev) and answers, for a word or a
// multi-word phrase, the other lemmas of its synsets: its synonyms
// ("car": auto, automobile, machine, motorcar), abbreviations ("usa":
// United States, United States of America, America, …; "ai": artificial
// intelligence) and collocations ("high blood pressure": hypertension).
//
// Which senses answer is the caller's choice (Senses): every sense, the
// first sense of each part of speech (WordNet lists a lemma's senses
// most frequent first), the senses seen in WordNet's sense-tagged
// corpora or the one seen most often (cntlist.rev's counts). Pertainyms
// answer the adjectives that pertain to a noun ("kidney": renal; "lung":
// pulmonary). A word the index lacks is reduced to its base forms as
// WordNet's morphy does: the exception lists, then the detachment rules
// of its part of speech ("attacks" → attack, "mice" → mouse).
//
// Open keeps the lemmas of every synset, each lemma's senses and the
// pertainyms in memory (no glosses, no other pointers): 147,306 lemmas
// and 117,659 synsets, about 30 MB of heap; reading the database takes
// about a second on a loaded 2-core machine.
package wordnet

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// POS is a part of speech, in WordNet's order of files.
type POS uint8

// The parts of speech.
const (
	Noun POS = iota
	Verb
	Adj
	Adv
)

var posNames = [...]string{Noun: "noun", Verb: "verb", Adj: "adj", Adv: "adv"}

// String returns the file suffix of p (noun, verb, adj, adv).
func (p POS) String() string { return posNames[p] }

// Files are the database files Open reads (cntlist.rev is optional:
// without it every sense counts 0).
var Files = []string{
	"index.noun", "index.verb", "index.adj", "index.adv",
	"data.noun", "data.verb", "data.adj", "data.adv",
	"noun.exc", "verb.exc", "adj.exc", "adv.exc",
}

// Sense is one sense of a lemma: its synset and how often the sense
// was tagged in WordNet's semantic concordances.
type Sense struct {
	POS    POS
	Synset int // index into the database's synsets
	Count  int
}

// WordNet is a loaded database. It is safe for concurrent use.
type WordNet struct {
	synsets [][]string         // each synset's lemmas as written ("United_States")
	senses  map[string][]Sense // lowercased lemma ("united_states") → senses, per POS in index order
	exc     [4]map[string][]string
	// pertainyms: each noun synset's adjectives and adverbs that pertain
	// to it ("kidney": renal, nephritic; "lung": pulmonary), lowercased.
	pertainyms map[int][]string
	// hypernyms: each synset's direct hypernyms ("@"), as synsets.
	hypernyms map[int][]int
	maxWords  int // the most words of a lemma
}

// Open reads the database in dir.
func Open(dir string) (*WordNet, error) {
	counts, err := readCounts(filepath.Join(dir, "cntlist.rev"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	wn := &WordNet{senses: map[string][]Sense{}, pertainyms: map[int][]string{}, hypernyms: map[int][]int{}}
	var pending []pertainym
	var nouns map[int]synsetInfo
	for p := Noun; p <= Adv; p++ {
		offsets, pert, err := wn.readData(filepath.Join(dir, "data."+p.String()), p, counts)
		if err != nil {
			return nil, err
		}
		if p == Noun {
			nouns = offsets
		}
		pending = append(pending, pert...)
		if err := wn.readIndex(filepath.Join(dir, "index."+p.String()), p, offsets); err != nil {
			return nil, err
		}
		if wn.exc[p], err = readExceptions(filepath.Join(dir, p.String()+".exc")); err != nil {
			return nil, err
		}
	}
	if len(wn.senses) == 0 {
		return nil, fmt.Errorf("wordnet %s: no lemmas", dir)
	}
	for _, pt := range pending {
		if info, ok := nouns[pt.noun]; ok && !slices.Contains(wn.pertainyms[info.n], pt.lemma) {
			wn.pertainyms[info.n] = append(wn.pertainyms[info.n], pt.lemma)
		}
	}
	return wn, nil
}

// pertainym is an adjective's or adverb's pointer "\\" to the noun
// synset (its offset) it pertains to.
type pertainym struct {
	lemma string
	noun  int
}

// synsetInfo is what readData keeps of a synset until the index refers
// to it: its number and each lowercased lemma's tag count.
type synsetInfo struct {
	n      int
	counts map[string]int
}

var ssNumber = map[string]string{"n": "1", "v": "2", "a": "3", "r": "4", "s": "5"}

// readData reads a data file's synsets: "offset lex_filenum ss_type
// w_cnt word lex_id … p_cnt [pointer…] … | gloss"; lines starting with
// spaces are the licence. Each lemma's tag count is looked up by its
// sense key, "lemma%ss_type:lex_filenum:lex_id:head_word:head_id", the
// head (of a satellite adjective) being the first word of the cluster's
// head synset, which its "&" pointer names.
func (wn *WordNet) readData(path string, p POS, counts map[string]int) (map[int]synsetInfo, []pertainym, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("wordnet: %w", err)
	}
	var pert []pertainym
	var hyper [][2]int // synset, its hypernym's offset
	defer f.Close()
	offsets := map[int]synsetInfo{}
	type word struct {
		lemma string // lowercased
		lexID string
	}
	type synset struct {
		off, head   int // head: -1 unless a satellite
		ss, lexFile string
		words       []word
	}
	var all []synset
	err = eachLine(f, func(line string) error {
		if line == "" || line[0] == ' ' {
			return nil
		}
		fs := strings.Fields(line)
		if len(fs) < 4 {
			return fmt.Errorf("short line %q", line)
		}
		off, err1 := strconv.Atoi(fs[0])
		n, err2 := strconv.ParseUint(fs[3], 16, 16)
		if err1 != nil || err2 != nil || len(fs) < 5+2*int(n) {
			return fmt.Errorf("bad synset line %.60q", line)
		}
		num, ok := ssNumber[fs[2]]
		if !ok {
			return fmt.Errorf("bad synset type in %.60q", line)
		}
		ss := synset{off: off, head: -1, ss: num, lexFile: fs[1]}
		lemmas := make([]string, 0, n)
		for i := range int(n) {
			w := fs[4+2*i]
			// Adjectives may carry a syntactic marker: "(a)", "(p)", "(ip)".
			if j := strings.IndexByte(w, '('); j > 0 && strings.HasSuffix(w, ")") {
				w = w[:j]
			}
			lexID, err := strconv.ParseUint(fs[5+2*i], 16, 8)
			if err != nil {
				return fmt.Errorf("bad lex_id in %.60q", line)
			}
			// A copy: a substring would keep the whole line (gloss and
			// pointers) alive.
			lemmas = append(lemmas, strings.Clone(w))
			if counts != nil {
				ss.words = append(ss.words, word{strings.ToLower(lemmas[i]), dec2(lexID)})
			}
		}
		// Pointers: "symbol offset pos source/target": the first "&"
		// of a satellite names its head synset; "\\" to a noun, what an
		// adjective or adverb pertains to (source: which word, 00: all).
		k := 4 + 2*int(n)
		np, err := strconv.Atoi(fs[k])
		if err != nil || len(fs) < k+1+4*np {
			return fmt.Errorf("bad pointers in %.60q", line)
		}
		for j := range np {
			sym, target, pos, st := fs[k+1+4*j], fs[k+2+4*j], fs[k+3+4*j], fs[k+4+4*j]
			switch {
			case sym == "@" && pos == fs[2][:1]:
				to, err := strconv.Atoi(target)
				if err != nil {
					return fmt.Errorf("bad pointer in %.60q", line)
				}
				hyper = append(hyper, [2]int{len(wn.synsets), to})
			case sym == "&" && fs[2] == "s" && ss.head < 0:
				ss.head, _ = strconv.Atoi(target)
			case sym == "\\" && pos == "n" && (p == Adj || p == Adv):
				to, err := strconv.Atoi(target)
				src, err2 := strconv.ParseUint(st[:min(2, len(st))], 16, 8)
				if err != nil || err2 != nil {
					return fmt.Errorf("bad pointer in %.60q", line)
				}
				for i, l := range lemmas {
					if src == 0 || int(src) == i+1 {
						pert = append(pert, pertainym{strings.ToLower(l), to})
					}
				}
			}
		}
		offsets[off] = synsetInfo{n: len(wn.synsets)}
		wn.synsets = append(wn.synsets, lemmas)
		if counts != nil {
			all = append(all, ss)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("wordnet %s: %w", path, err)
	}
	byOff := make(map[int]int, len(all))
	for i, ss := range all {
		byOff[ss.off] = i
	}
	for _, ss := range all {
		head := ":"
		if i, ok := byOff[ss.head]; ok && len(all[i].words) > 0 {
			head = all[i].words[0].lemma + ":" + all[i].words[0].lexID
		}
		info := offsets[ss.off]
		info.counts = make(map[string]int, len(ss.words))
		for _, w := range ss.words {
			info.counts[w.lemma] = counts[w.lemma+"%"+ss.ss+":"+ss.lexFile+":"+w.lexID+":"+head]
		}
		offsets[ss.off] = info
	}
	for _, h := range hyper {
		if info, ok := offsets[h[1]]; ok {
			wn.hypernyms[h[0]] = append(wn.hypernyms[h[0]], info.n)
		}
	}
	return offsets, pert, nil
}

// readIndex reads an index file: "lemma pos synset_cnt p_cnt
// [ptr_symbol…] sense_cnt tagsense_cnt synset_offset…", senses most
// frequent first.
func (wn *WordNet) readIndex(path string, p POS, offsets map[int]synsetInfo) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("wordnet: %w", err)
	}
	defer f.Close()
	err = eachLine(f, func(line string) error {
		if line == "" || line[0] == ' ' {
			return nil
		}
		fs := strings.Fields(line)
		if len(fs) < 6 {
			return fmt.Errorf("short line %q", line)
		}
		lemma := fs[0]
		nSyn, err1 := strconv.Atoi(fs[2])
		nPtr, err2 := strconv.Atoi(fs[3])
		if err1 != nil || err2 != nil || len(fs) != 6+nPtr+nSyn {
			return fmt.Errorf("bad index line %.60q", line)
		}
		for _, o := range fs[6+nPtr:] {
			off, err := strconv.Atoi(o)
			if err != nil {
				return fmt.Errorf("bad offset in %.60q", line)
			}
			info, ok := offsets[off]
			if !ok {
				return fmt.Errorf("%s: synset %s is not in data.%s", lemma, o, p)
			}
			if _, ok := wn.senses[lemma]; !ok {
				lemma = strings.Clone(lemma)
			}
			wn.senses[lemma] = append(wn.senses[lemma], Sense{POS: p, Synset: info.n, Count: info.counts[lemma]})
		}
		wn.maxWords = max(wn.maxWords, strings.Count(lemma, "_")+1)
		return nil
	})
	if err != nil {
		return fmt.Errorf("wordnet %s: %w", path, err)
	}
	return nil
}

// readCounts reads cntlist.rev: "sense_key sense_number tag_cnt", keyed
// by the sense key.
func readCounts(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wordnet: %w", err)
	}
	defer f.Close()
	out := map[string]int{}
	err = eachLine(f, func(line string) error {
		fs := strings.Fields(line)
		if len(fs) != 3 {
			return fmt.Errorf("bad line %q", line)
		}
		n, err := strconv.Atoi(fs[2])
		if err != nil {
			return fmt.Errorf("bad count in %q", line)
		}
		key := fs[0]
		out[key] += n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wordnet %s: %w", path, err)
	}
	return out, nil
}

// readExceptions reads an exception list: "inflected base…".
func readExceptions(path string) (map[string][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wordnet: %w", err)
	}
	defer f.Close()
	out := map[string][]string{}
	err = eachLine(f, func(line string) error {
		fs := strings.Fields(line)
		if len(fs) >= 2 {
			out[fs[0]] = append(out[fs[0]], fs[1:]...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wordnet %s: %w", path, err)
	}
	return out, nil
}

func eachLine(r io.Reader, f func(string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if err := f(strings.TrimRight(sc.Text(), " \r")); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Lemmas is the number of distinct lemmas.
func (wn *WordNet) Lemmas() int { return len(wn.senses) }

// MaxWords is the most words a lemma has.
func (wn *WordNet) MaxWords() int { return wn.maxWords }

// key turns a phrase ("High blood pressure", "heart_attack") into the
// index's form ("high_blood_pressure").
func key(phrase string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.ToLower(phrase), "_", " ")), "_")
}

// Senses says which senses of a lemma answer.
type Senses uint8

const (
	// AllSenses: every sense of every part of speech.
	AllSenses Senses = iota
	// FirstSense: the first (most frequent) sense of each part of speech.
	FirstSense
	// TaggedSenses: the senses tagged at least once in WordNet's
	// concordances; when none is, the first sense of each part of speech.
	TaggedSenses
	// TopSense: the sense tagged most often (ties and untagged lemmas:
	// the first sense, nouns before verbs before adjectives and adverbs).
	TopSense
)

// ParseSenses reads all, first, tagged or top.
func ParseSenses(s string) (Senses, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "all":
		return AllSenses, nil
	case "first":
		return FirstSense, nil
	case "tagged":
		return TaggedSenses, nil
	case "top":
		return TopSense, nil
	}
	return 0, fmt.Errorf("wordnet senses %q: want all, first, tagged or top", s)
}

// String returns the name ParseSenses reads.
func (s Senses) String() string { return [...]string{"all", "first", "tagged", "top"}[s] }

// Lemma returns the index's form of phrase, or of a base form of it
// (morphy: the last word's exceptions and detachments), and whether
// WordNet holds it.
func (wn *WordNet) Lemma(phrase string) (string, bool) {
	k := key(phrase)
	if k == "" {
		return "", false
	}
	if _, ok := wn.senses[k]; ok {
		return k, true
	}
	head, last := "", k
	if i := strings.LastIndexByte(k, '_'); i >= 0 {
		head, last = k[:i+1], k[i+1:]
	}
	for p := Noun; p <= Adv; p++ {
		for _, b := range wn.baseForms(last, p) {
			if _, ok := wn.senses[head+b]; ok {
				return head + b, true
			}
		}
	}
	return "", false
}

// detach are morphy's suffix rules per part of speech.
var detach = [4][][2]string{
	Noun: {{"s", ""}, {"ses", "s"}, {"xes", "x"}, {"zes", "z"}, {"ches", "ch"}, {"shes", "sh"}, {"men", "man"}, {"ies", "y"}},
	Verb: {{"s", ""}, {"ies", "y"}, {"es", "e"}, {"es", ""}, {"ed", "e"}, {"ed", ""}, {"ing", "e"}, {"ing", ""}},
	Adj:  {{"er", ""}, {"est", ""}, {"er", "e"}, {"est", "e"}},
}

// baseForms are word's candidate base forms as part of speech p: its
// exceptions, then its detachments.
func (wn *WordNet) baseForms(word string, p POS) []string {
	out := slicesClone(wn.exc[p][word])
	for _, r := range detach[p] {
		if strings.HasSuffix(word, r[0]) && len(word) > len(r[0]) {
			out = append(out, word[:len(word)-len(r[0])]+r[1])
		}
	}
	return out
}

// dec2 formats a lex_id as the sense keys do (two decimal digits).
func dec2(n uint64) string {
	if n < 10 {
		return "0" + strconv.FormatUint(n, 10)
	}
	return strconv.FormatUint(n, 10)
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// chosen returns the senses of lemma (the index's form) that which
// selects.
func (wn *WordNet) chosen(lemma string, which Senses) []Sense {
	all := wn.senses[lemma]
	switch which {
	case AllSenses:
		return all
	case TopSense:
		best := -1
		for i, s := range all {
			if best < 0 || s.Count > all[best].Count {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		return all[best : best+1]
	case TaggedSenses:
		var out []Sense
		for _, s := range all {
			if s.Count > 0 {
				out = append(out, s)
			}
		}
		if out != nil {
			return out
		}
	}
	var out []Sense
	for i, s := range all {
		if i == 0 || s.POS != all[i-1].POS {
			out = append(out, s)
		}
	}
	return out
}

// Synonyms returns the other lemmas of phrase's chosen senses'
// synsets, lowercased, words separated by spaces ("united states of
// america"), each once, in the order of the senses and of the lemmas in
// their synsets; nil when WordNet does not hold phrase (nor a base form
// of it).
func (wn *WordNet) Synonyms(phrase string, which Senses) []string {
	lemma, ok := wn.Lemma(phrase)
	if !ok {
		return nil
	}
	var out []string
	seen := map[string]bool{lemma: true}
	for _, s := range wn.chosen(lemma, which) {
		for _, l := range wn.synsets[s.Synset] {
			k := key(l)
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, strings.ReplaceAll(k, "_", " "))
		}
	}
	return out
}

// Pertainyms returns the adjectives and adverbs that pertain to the
// noun senses of phrase which selects ("kidney": renal, nephritic;
// "lung": pneumonic, pulmonary, pulmonic; "liver": hepatic), lowercased,
// words separated by spaces, each once; nil when there are none.
func (wn *WordNet) Pertainyms(phrase string, which Senses) []string {
	lemma, ok := wn.Lemma(phrase)
	if !ok {
		return nil
	}
	var out []string
	for _, s := range wn.chosen(lemma, which) {
		for _, a := range wn.pertainyms[s.Synset] {
			a = strings.ReplaceAll(a, "_", " ")
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// Hypernyms returns, for the senses of phrase which selects whose
// synset holds no other lemma (lorry: {lorry}), the lemmas of their
// direct hypernyms (truck, motortruck), lowercased, each once; nil when
// there are none.
func (wn *WordNet) Hypernyms(phrase string, which Senses) []string {
	lemma, ok := wn.Lemma(phrase)
	if !ok {
		return nil
	}
	var out []string
	for _, s := range wn.chosen(lemma, which) {
		if len(wn.synsets[s.Synset]) > 1 {
			continue
		}
		for _, h := range wn.hypernyms[s.Synset] {
			for _, l := range wn.synsets[h] {
				l = strings.ReplaceAll(strings.ToLower(l), "_", " ")
				if !slices.Contains(out, l) {
					out = append(out, l)
				}
			}
		}
	}
	return out
}

// SensesOf returns lemma's senses (the index's form, as Lemma gives it),
// per part of speech most frequent first.
func (wn *WordNet) SensesOf(lemma string) []Sense { return wn.senses[lemma] }
