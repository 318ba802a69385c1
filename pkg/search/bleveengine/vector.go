package bleveengine

// neighbour is a vector search result: a slot and its squared L2 distance
// to the query.
type neighbour struct {
	slot int32
	id   int64
	d2   float32
}

// worse orders neighbours from the farthest: larger distance, then larger
// id (ties go to the smaller id).
func worse(a, b neighbour) bool {
	if a.d2 != b.d2 {
		return a.d2 > b.d2
	}
	return a.id > b.id
}
