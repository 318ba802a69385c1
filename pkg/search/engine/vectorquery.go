package engine

import (
	"context"
	"errors"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/dsl"
)

// The query side of a vector clause, the same for every engine: the query
// vector (with the use embedder's short-query weights, the word statistics
// of the caller's documents, engine.DocFreqs, and the shift away from the
// mean content vector of those documents, engine.VectorMean) and the
// second stage (Rerank) are built here, once, from what the engine
// answers through those two interfaces; the engines only execute them.
// So a query ranks the same way on the embedded engine and on OpenSearch
// (docs/design.md §6, "Query side").

// TextEmbedder is what the query side needs of an embedder: the same one
// the indexer uses (pkg/embed).
type TextEmbedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// queryEmbedder is implemented by embedders whose model embeds search
// queries differently from documents (pkg/embed's local embedder, with a
// query prefix such as e5's "query: ").
type queryEmbedder interface {
	EmbedQueries(ctx context.Context, queries []string) ([][]float32, error)
}

// statsQueryEmbedder is implemented by embedders that weight a query's
// words by how common they are among the documents searched (pkg/embed's
// use embedder).
type statsQueryEmbedder interface {
	EmbedQueriesWithStats(ctx context.Context, queries []string, stats embed.WordStats) ([][]float32, error)
}

// corpusQueryEmbedder is implemented by embedders that also shift a
// query away from the mean content vector of the index (pkg/embed's use
// embedder, against hubs).
type corpusQueryEmbedder interface {
	EmbedQueriesWithCorpus(ctx context.Context, queries []string, stats embed.WordStats, mean embed.MeanVector) ([][]float32, error)
	Dimensions() int
}

// contentReranker is implemented by embedders that give a search's
// nearest documents a second stage by their content (pkg/embed's use
// embedder; nil when the query gets none).
type contentReranker interface {
	Reranker(query string) *embed.Rerank
}

// EmbedQueries embeds search queries with emb, as queries where the
// embedder makes the difference; for the content target, with the
// statistics of the documents req's caller can see in eng when both the
// embedder and the engine take part (DocFreqs), shifted away from their
// mean content vector when both do (VectorMean); for the metadata target,
// as metadata where the embedder embeds metadata apart (the use
// embedder's metadata vectors hold only the lexical half, so a query
// weighted towards meaning would have nothing left to compare with them).
// req may be nil (no statistics).
func EmbedQueries(ctx context.Context, emb TextEmbedder, eng Engine, queries []string, req *Request) ([][]float32, error) {
	if me, ok := emb.(embed.MetadataEmbedder); ok && req != nil && req.Plan.Vector != nil && req.Plan.Vector.Target == dsl.TargetMetadata {
		return me.EmbedMetadata(ctx, queries)
	}
	if se, ok := emb.(statsQueryEmbedder); ok && req != nil && req.Plan.Vector != nil && req.Plan.Vector.Target == dsl.TargetContent {
		if df, ok := eng.(DocFreqs); ok {
			stats := func(ctx context.Context, words []string) ([]int64, int64, error) {
				return df.DocFreqs(ctx, *req, words)
			}
			if ce, ok := emb.(corpusQueryEmbedder); ok {
				if vm, ok := eng.(VectorMean); ok {
					return ce.EmbedQueriesWithCorpus(ctx, queries, stats, func(ctx context.Context) ([]float32, error) {
						return vm.MeanContentVector(ctx, *req, ce.Dimensions())
					})
				}
			}
			return se.EmbedQueriesWithStats(ctx, queries, stats)
		}
	}
	if q, ok := emb.(queryEmbedder); ok {
		return q.EmbedQueries(ctx, queries)
	}
	return emb.Embed(ctx, queries)
}

// PrepareVector fills in the query side of req's vector clause (none: it
// does nothing): QueryVector, embedded by EmbedQueries against eng, and,
// for the content target, Rerank, the embedder's second stage for the
// query (nil when it gives none).
func PrepareVector(ctx context.Context, emb TextEmbedder, eng Engine, req *Request) error {
	v := req.Plan.Vector
	if v == nil {
		return nil
	}
	vecs, err := EmbedQueries(ctx, emb, eng, []string{v.Query}, req)
	if err == nil && len(vecs) != 1 {
		err = errors.New("embedder returned no vector")
	}
	if err != nil {
		return err
	}
	req.QueryVector = vecs[0]
	req.Rerank = nil
	if cr, ok := emb.(contentReranker); ok && v.Target == dsl.TargetContent {
		if r := cr.Reranker(v.Query); r != nil {
			req.Rerank = &Rerank{Depth: r.Depth, Weight: r.Weight, Score: r.Score}
		}
	}
	return nil
}

// Active reports whether r re-scores anything (a nil r does not).
func (r *Rerank) Active() bool {
	return r != nil && r.Score != nil && r.Depth > 0 && r.Weight > 0
}

// Distance returns the squared distance d2 of the document at rank
// (0-based, nearest first, ties by id) of a vector-only search's nearest
// documents after the second stage: the first Depth move to the distance
// of their cosine plus Weight·Score(content), i.e. d² + 2·Weight·(1 −
// Score), Score clamped to [−1, 1]; the others to d² + 4·Weight, which
// keeps them behind. content is called only for the first Depth. Both
// engines apply it, then order by the new d² (ties by id) and score a hit
// 1/(1+d²).
func (r *Rerank) Distance(rank int, d2 float32, content func() (string, error)) (float32, error) {
	if rank >= r.Depth {
		return d2 + float32(4*r.Weight), nil
	}
	c, err := content()
	if err != nil {
		return 0, err
	}
	f := min(max(r.Score(c), -1), 1)
	return d2 + float32(2*r.Weight*(1-f)), nil
}
