package ann

// prefetchTile asks the CPU to fetch the two cache lines from p (a fifth
// of a tile's codes of one vector) into its caches, without waiting for them:
// PREFETCHT0, a hint that never faults (prefetch_amd64.s).
//
//go:noescape
func prefetchTile(p *int8)
