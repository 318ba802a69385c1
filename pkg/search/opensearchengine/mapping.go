package opensearchengine

import (
	"strconv"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/dsl"
)

// obj is a JSON object of a request body. encoding/json writes map keys in
// sorted order, so every body this package builds is deterministic (and
// golden-testable).
type obj = map[string]any

// Names of the index fields that are not dsl metadata fields (those keep
// their dsl names: doc_type, date, filesbelongto, ...).
const (
	fieldID             = "id"               // long, also the _id
	fieldGroups         = "groups"           // long, multi-valued: visibility
	fieldContent        = "content"          // text, english analyzer
	fieldContentExact   = "content.exact"    // text, lowercased standard tokens
	fieldPassages       = "content_passages" // nested, one object per passage
	fieldPassageVector  = "vector"           // knn_vector of a passage
	fieldMetadataVector = "metadata_vector"  // knn_vector
	// fieldContentVector is the single content vector of indexes created
	// before passages; New refuses such an index.
	fieldContentVector = "content_vector"
	// metaEmbedder is the key of the embedder identity in the mapping's
	// _meta.
	metaEmbedder = "docrepo_embedder"
	// lowerSuffix names the lowercase-normalized sub-field of every string
	// field (contains and startswith).
	lowerSuffix = ".lower"
)

// Analysis names defined in the index settings.
const (
	analyzerExact   = "docrepo_exact"
	normalizerLower = "docrepo_lower"
)

// keywordIgnoreAbove keeps a keyword term under Lucene's 32766-byte limit
// (8191 characters of up to 4 UTF-8 bytes). A longer value is kept in
// _source but not indexed: filters and sort treat it as absent. Metadata
// values are far shorter (docs/api.md §8: at most 400 characters).
const keywordIgnoreAbove = 8191

// HNSW parameters of both vector fields (the k-NN plugin's defaults for
// the lucene engine, written out so that the mapping says what it is).
const (
	hnswM              = 16
	hnswEfConstruction = 100
)

// IndexBody returns the body of the create-index request: the settings
// (index.knn, shards, analysis) and the mapping of every field. The
// mapping is strict: a document with a field it does not name is rejected
// rather than silently mapped.
//
//   - content: text with the built-in english analyzer (standard tokenizer,
//     possessives, lowercase, English stop words, Porter stemming), BM25;
//     bare words match here. Its sub-field content.exact uses
//     docrepo_exact (standard tokenizer + lowercase, no stop words, so
//     positions are dense); phrases, prefixes and NEAR match there. Both
//     index offsets, so highlighting never re-analyses a large text.
//   - string metadata fields: keyword (eq/ne/in/nin/ranges/sort, exact and
//     case-sensitive) with a .lower sub-field normalized to lowercase
//     (contains/startswith).
//   - id, filesbelongto, groups: long; date, entry_date: date (millisecond
//     resolution; _source keeps the value as written); privileged,
//     islocked: boolean.
//   - content_passages: nested, one object per passage of the content
//     with its vector (content_passages.vector); metadata_vector: both
//     knn_vector, HNSW on the lucene engine, space_type l2 (score
//     1/(1+d²)). A nested knn query scores a document by its nearest
//     passage and returns k documents, not k passages.
//   - _meta.docrepo_embedder: the embedder identity (Config.Embedder),
//     when set.
func IndexBody(cfg Config) obj {
	props := obj{
		fieldID:     obj{"type": "long"},
		fieldGroups: obj{"type": "long"},
		fieldContent: obj{
			"type":          "text",
			"analyzer":      "english",
			"index_options": "offsets",
			"fields": obj{
				"exact": obj{
					"type":          "text",
					"analyzer":      analyzerExact,
					"index_options": "offsets",
				},
			},
		},
		fieldPassages: obj{
			"type":       "nested",
			"properties": obj{fieldPassageVector: knnVector(cfg.Dimensions)},
		},
		fieldMetadataVector: knnVector(cfg.MetadataDimensions),
	}
	for _, f := range dsl.MetadataFields() {
		props[f.Name] = fieldMapping(f)
	}
	index := obj{
		"knn":               true,
		"number_of_shards":  cfg.Shards,
		"max_result_window": dsl.MaxWindow,
	}
	if cfg.GCDeletes > 0 {
		index["gc_deletes"] = strconv.FormatInt(cfg.GCDeletes.Milliseconds(), 10) + "ms"
	}
	if cfg.Replicas != nil {
		index["number_of_replicas"] = *cfg.Replicas
	}
	mappings := obj{
		"dynamic":    "strict",
		"properties": props,
	}
	if cfg.Embedder != (embed.Identity{}) {
		mappings["_meta"] = obj{metaEmbedder: cfg.Embedder}
	}
	return obj{
		"settings": obj{
			"index": index,
			"analysis": obj{
				"analyzer": obj{
					analyzerExact: obj{
						"type":      "custom",
						"tokenizer": "standard",
						"filter":    []string{"lowercase"},
					},
				},
				"normalizer": obj{
					normalizerLower: obj{
						"type":   "custom",
						"filter": []string{"lowercase"},
					},
				},
			},
		},
		"mappings": mappings,
	}
}

func fieldMapping(f dsl.Field) obj {
	switch f.Type {
	case dsl.TypeString:
		return obj{
			"type":         "keyword",
			"ignore_above": keywordIgnoreAbove,
			"fields": obj{
				"lower": obj{
					"type":         "keyword",
					"normalizer":   normalizerLower,
					"ignore_above": keywordIgnoreAbove,
				},
			},
		}
	case dsl.TypeInt:
		return obj{"type": "long"}
	case dsl.TypeBool:
		return obj{"type": "boolean"}
	case dsl.TypeDateTime:
		// The default format, strict_date_optional_time||epoch_millis,
		// parses up to nine fraction digits; the value is indexed at
		// millisecond resolution.
		return obj{"type": "date"}
	}
	panic("opensearchengine: field " + f.Name + " has no mapping")
}

func knnVector(dims int) obj {
	return obj{
		"type":      "knn_vector",
		"dimension": dims,
		"method": obj{
			"name":       "hnsw",
			"engine":     "lucene",
			"space_type": "l2",
			"parameters": obj{
				"m":               hnswM,
				"ef_construction": hnswEfConstruction,
			},
		},
	}
}
