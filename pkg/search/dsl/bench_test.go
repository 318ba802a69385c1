package dsl

import (
	"strings"
	"testing"
)

// Worst cases at the size limits: parsing must stay linear in the input.
func BenchmarkParseFTSWorstCase(b *testing.B) {
	inputs := map[string]string{
		"words":          strings.TrimSpace(strings.Repeat("ab ", MaxFTSTerms)),
		"or chain":       strings.TrimSpace(strings.Repeat("ab OR ", MaxFTSTerms-1) + "ab"),
		"np groups":      `*NP` + strings.Repeat(`"a" `, MaxFTSTerms),
		"long word":      strings.Repeat("x", MaxFTSQueryBytes),
		"spaces":         strings.Repeat(" ", MaxFTSQueryBytes-1) + "a",
		"unicode spaces": strings.Repeat("\u3000", MaxFTSQueryBytes/3),
		"dangling OR":    strings.Repeat("OR ", MaxFTSQueryBytes/3),
		"unterminated":   strings.Repeat("ü", 4000) + ` "`,
	}
	for name, in := range inputs {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				_, _ = ParseFTS(in)
			}
		})
	}
}

func BenchmarkParseWide(b *testing.B) {
	body := `{"where":{"or":[` + strings.TrimSuffix(strings.Repeat(`{"in":{"field":"doc_type","value":["a","b","c"]}},`, MaxClauses-1), ",") + `]}}`
	for b.Loop() {
		if _, err := parseBody(body); err != nil {
			b.Fatal(err)
		}
	}
}
