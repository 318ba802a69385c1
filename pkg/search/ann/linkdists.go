package ann

import "math"

// distPageNodes is the number of nodes per page of linkDists.
const distPageNodes = 64

// linkDists is the graph's linkDist: for each place of links0, the
// squared distance of the link to its node, NaN when not known. It is
// kept in pages of distPageNodes nodes (8 KiB at M 16), each allocated,
// every distance not known, when a distance on it is first recorded. A
// graph read back or joined without them knows none, and the first Add
// after an Open used to fill the whole table with NaN at once: 4·2·M
// bytes per node, 256 MiB for 2 M nodes, within the first
// single-document write after opening the 1 M dense index (issue 23).
// Paged, an Add allocates the pages of the lists it changes (about 2·M+1
// pages, ~260 KiB at M 16), and the table grows with the writes towards
// that whole size; small pages keep the growth gradual for a long-lived
// process that writes a little.
type linkDists struct {
	m0    int
	pages [][]float32
}

// of returns node's distances (m0 places), nil when none is known.
func (d *linkDists) of(node int32) []float32 {
	p := int(node) / distPageNodes
	if p >= len(d.pages) || d.pages[p] == nil {
		return nil
	}
	i := int(node) % distPageNodes * d.m0
	return d.pages[p][i : i+d.m0 : i+d.m0]
}

// forWrite returns node's distances, allocating its page (every distance
// NaN) if no distance on it was recorded yet.
func (d *linkDists) forWrite(node int32) []float32 {
	p := int(node) / distPageNodes
	if p >= len(d.pages) {
		d.pages = append(d.pages, make([][]float32, p+1-len(d.pages))...)
	}
	if d.pages[p] == nil {
		page := make([]float32, distPageNodes*d.m0)
		nan := float32(math.NaN())
		for i := range page {
			page[i] = nan
		}
		d.pages[p] = page
	}
	i := int(node) % distPageNodes * d.m0
	return d.pages[p][i : i+d.m0 : i+d.m0]
}

// forget marks node's distances not known (without allocating a page).
func (d *linkDists) forget(node int32) {
	if dd := d.of(node); dd != nil {
		nan := float32(math.NaN())
		for i := range dd {
			dd[i] = nan
		}
	}
}

// at returns the distance of place p of links0 (NaN when not known).
func (d *linkDists) at(p int) float32 {
	if dd := d.of(int32(p / d.m0)); dd != nil {
		return dd[p%d.m0]
	}
	return float32(math.NaN())
}

// copyFrom records, for src's nodes [0, n), their known distances as
// those of the nodes from base.
func (d *linkDists) copyFrom(src *linkDists, base, n int) {
	for j := 0; j < n; j += distPageNodes {
		if p := j / distPageNodes; p >= len(src.pages) || src.pages[p] == nil {
			continue
		}
		for k := j; k < min(j+distPageNodes, n); k++ {
			copy(d.forWrite(int32(base+k)), src.of(int32(k)))
		}
	}
}
