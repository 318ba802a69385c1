package embed

import (
	"fmt"
	"path/filepath"

	"github.com/docrepo/docrepo/pkg/embed/sentencepiece"
	"github.com/docrepo/docrepo/pkg/embed/uselite"
)

// The use embedder's real parts: the package's SentencePiece tokenizer
// (vocab.json) and the encoder run in Go (model.json and its shards).
func init() {
	useLoader = func(dir string) (PieceTokenizer, PieceEncoder, error) {
		tok, err := sentencepiece.Load(filepath.Join(dir, USEVocabFile))
		if err != nil {
			return nil, nil, err
		}
		m, err := uselite.Load(dir)
		if err != nil {
			return nil, nil, err
		}
		if tok.VocabSize() > m.VocabSize() {
			return nil, nil, fmt.Errorf("the vocabulary has %d pieces, the encoder's embedding table %d rows", tok.VocabSize(), m.VocabSize())
		}
		return tok, m, nil
	}
}
