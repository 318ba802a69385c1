// Package ann finds approximate nearest neighbours for the embedded search
// engine (pkg/search/bleveengine), in pure Go:
//
//   - Graph: an HNSW graph (Malkov and Yashunin, 2016): M links a node on
//     the upper layers, 2·M on layer 0, neighbours chosen by HNSW's
//     heuristic, added one at a time by one writer while searches run.
//     The graph holds only links and each vector's squared norm; the
//     vectors themselves are read through a function of the caller's (the
//     engine's memory-mapped file of full-precision vectors), so distances
//     on the graph are exact. Search applies a filter during the walk:
//     nodes the filter refuses are passed through but never returned, and
//     the walk goes on until it has Ef admitted nodes (or MaxVisits).
//     Deleted nodes stay as waypoints. Nodes are kept in shards of
//     Config.Shard (100,000 by default), each linked within itself and
//     walked from its own entry point, the shards' results merged: one
//     graph's recall at a fixed breadth falls as it grows (recall@10 0.996
//     at 100 k, 0.984 at 200 k), a shard's stays at its size's (ten
//     shards at 1 M: 0.996). Build builds a graph's shards at once, one
//     per worker, and Join joins shards built apart. A walk reads a
//     vector only in the span of the query's non-zero components. WriteTo
//     and ReadGraph persist it (checksummed); AddLogged returns a record
//     of what an Add changed and Replay applies it, so a log of Adds
//     after a checkpoint rebuilds the graph without computing a distance.
//     The writer keeps each layer-0 link's distance and whether the
//     heuristic chose it for its own sake (~132 B per node at M 16, never
//     written), so a full list is shrunk with HNSW's heuristic computing
//     only the new node's distances.
//   - Codes: int8 codes with a scale per vector, in blocks of 1,024
//     vectors, for exact scans. Laid out by dimension (ByDimension), a
//     sparse query (a short text's hash vector, a few dozen non-zero
//     components of 768) costs a few dozen multiplies per vector and
//     reads only those components' bytes; laid out by vector (ByVector,
//     for sets whose queries are dense), a scan reads and scores only the
//     vectors it admits, so a filtered scan costs what the filter admits.
//     AppendBlockRecord and AppendBlock persist and load a full block
//     (checksummed), so a start need not quantise every vector;
//     AppendBlockFrom converts a record of the other layout.
//
// Why both: the graph answers document-like (dense) queries in about
// ef·M·log N distance computations with recall@10 ≥ 0.97, but a three-word
// query's hash vector is unlike every document's, and a graph built from
// documents finds few of its true neighbours (recall@10 0.49-0.55 at ef
// 100-128 on 2,000-3,000 documents; BenchmarkCompare), while the code scan
// finds all of them after re-ranking. The engine walks the graph for dense
// queries and scans the codes for sparse ones and for filters that admit
// few documents.
//
// BenchmarkCompare measures this graph against github.com/coder/hnsw and
// the int8 codes against float16; the figures are in docs/benchmarks.md.
package ann
