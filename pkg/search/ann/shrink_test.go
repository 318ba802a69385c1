package ann

import (
	"slices"
	"testing"
)

// TestFullListDropsItsFarthestNonDiverseLink pins the rule for a full
// neighbour list (reverseLinks, dropOne): node 0 at the origin holds four
// links (layer 0 of M 2), and a new node that links to it replaces the
// farthest link that is nearer to the new node than to node 0; else the
// new node is not linked when it is nearer to a nearer link than to node
// 0; else the farthest link goes (not the new node). The other links keep their places, and
// when the new node is the one dropped the list does not change.
func TestFullListDropsItsFarthestNonDiverseLink(t *testing.T) {
	// Links 1..4 of node 0, 4 the farthest; around, 3 lies just beside 1
	// (not diverse, but no new node made it so).
	spread := [][]float32{{1, 0, 0}, {0, 2, 0}, {0, -3, 0}, {-4, 0, 0}}
	around := [][]float32{{1, 0, 0}, {0, 2, 0}, {1.2, 0.1, 0}, {-3, 0, 0}}
	diverse := [][]float32{{1, 0, 0}, {0, 1.1, 0}, {-1.2, 0, 0}, {0, -1.3, 0}}
	const id = 5
	for _, tc := range []struct {
		name    string
		links   [][]float32
		added   []float32
		want    []int32
		changed bool
	}{
		// The new node lies between node 0 and 3: 3 goes, not 4.
		{"a link the new node makes not diverse goes before the farthest", spread, []float32{0, -2, 0}, []int32{1, 2, id, 4}, true},
		// The new node is the farthest and lies beside 2.
		{"a farthest new node that is not diverse is not linked", around, []float32{0.2, 3.5, 0}, []int32{1, 2, 3, 4}, false},
		// The new node is diverse and makes no link not diverse.
		{"else the farthest goes", around, []float32{0, -2.5, 0}, []int32{1, 2, 3, id}, true},
		// Every link and the new node (off the plane) are diverse.
		{"when all are diverse the farthest goes", diverse, []float32{0, 0, 0.8}, []int32{1, 2, 3, id}, true},
		// ... but not a diverse new node farther than every link (an
		// outlier).
		{"a diverse new node farther than every link stays", diverse, []float32{0, 0, 2}, []int32{1, 2, 3, id}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs := append([][]float32{{0, 0, 0}}, tc.links...)
			docs = append(docs, tc.added)
			g := New(3, func(id int32) []float32 { return docs[id] }, Config{M: 2})
			for i, v := range docs[:id] {
				own := []int32{0}
				if i == 0 {
					own = []int32{1, 2, 3, 4}
				}
				g.apply(&addition{id: int32(i), vn: sqNorm(v), own: [][]int32{own}})
			}
			got, appended, changed := g.reverseLinks(0, 0, id, testBetween(g, id, tc.added))
			if !slices.Equal(got, tc.want) || appended || changed != tc.changed {
				t.Errorf("links %v (appended %v, changed %v), want %v (changed %v)", got, appended, changed, tc.want, tc.changed)
			}
		})
	}
	// With room, the new node is appended.
	docs := [][]float32{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}}
	g := New(3, func(id int32) []float32 { return docs[id] }, Config{M: 2})
	g.apply(&addition{id: 0, vn: 0, own: [][]int32{{1}}})
	g.apply(&addition{id: 1, vn: 1, own: [][]int32{{0}}})
	got, appended, changed := g.reverseLinks(0, 0, 2, testBetween(g, 2, docs[2]))
	if !slices.Equal(got, []int32{1, 2}) || !appended || !changed {
		t.Errorf("with room: links %v (appended %v, changed %v), want [1 2] appended", got, appended, changed)
	}
}

// testBetween is the distance between two nodes of g or new node id (of
// vector v, not in g yet), as add gives reverseLinks.
func testBetween(g *Graph, id int32, v []float32) func(a, b int32) float32 {
	vn := sqNorm(v)
	return func(a, b int32) float32 {
		switch id {
		case a:
			return g.vdist(v, vn, b)
		case b:
			return g.vdist(v, vn, a)
		}
		return g.ndist(a, b)
	}
}
