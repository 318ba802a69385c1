package dsl_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/docrepo/docrepo/pkg/search/dsl"
)

func Example() {
	body := `{
		"where": {"and": [
			{"fts": {"field": "content", "query": "tax \"annual report\" OR summary* -draft"}},
			{"vector": {"target": "content", "query": "late payment penalties"}},
			{"gte": {"field": "date", "value": "2024-01-01"}},
			{"in": {"field": "filesbelongto", "value": [3, 7]}}
		]},
		"sort": [{"field": "date", "direction": "desc"}],
		"limit": 10
	}`
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		panic(err)
	}
	req, err := dsl.RequestFromMap(m)
	if err != nil {
		panic(err)
	}
	q, err := dsl.Parse(req)
	if err != nil {
		panic(err)
	}
	plan, _ := q.Plan() // never fails for a parsed query
	fmt.Println("mode:", plan.Mode)
	fmt.Println("vector:", plan.Vector.Target, plan.Vector.Query)
	fmt.Println("filters:", len(plan.Filters), "full-text:", len(plan.FullText))
	fts := plan.FullText[0].(*dsl.FTS)
	for _, n := range fts.Root.(*dsl.AllOf).Nodes {
		fmt.Printf("  %T %s\n", n, n)
	}
	fmt.Println("sort:", q.EffectiveSort())
	// Output:
	// mode: fts+vector+metadata
	// vector: content late payment penalties
	// filters: 2 full-text: 1
	//   *dsl.Word tax
	//   *dsl.AnyOf "annual report" OR summary*
	//   *dsl.Exclude -draft
	// sort: [{date true} {id false}]
}

func ExampleError() {
	_, err := dsl.Parse(dsl.Request{Where: map[string]any{
		"eq": map[string]any{"field": "docType", "value": "Invoice"},
	}})
	var de *dsl.Error
	if errors.As(err, &de) {
		fmt.Println(de.Detail) // the 400 response's detail
	}
	// Output:
	// Unknown field docType in eq clause. Field names must be lowercase snake_case
}
