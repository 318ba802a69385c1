package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// operationsPage is the page whose docrepoctl block lists the commands.
var operationsPage = filepath.Join("..", "..", "..", "docs", "operations.md")

// usageSynopses are the command lines of the usage text: under
// "commands:", a line indented by two spaces, up to the description
// column (two or more spaces) if the description shares the line.
func usageSynopses(t *testing.T) []string {
	t.Helper()
	_, cmds, ok := strings.Cut(usage, "\ncommands:\n")
	if !ok {
		t.Fatal(`usage has no "commands:" section`)
	}
	cmds, _, _ = strings.Cut(cmds, "\n\n")
	var out []string
	for _, line := range strings.Split(cmds, "\n") {
		if !strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "   ") {
			continue // a description's continuation
		}
		out = append(out, regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), 2)[0])
	}
	return out
}

// pageSynopses are the lines of the page's first sh block that start with
// "docrepoctl ", without it and without a trailing # comment.
func pageSynopses(t *testing.T) []string {
	t.Helper()
	page, err := os.ReadFile(operationsPage)
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(page), "\n## docrepoctl\n")
	if ok {
		_, block, ok = strings.Cut(block, "```sh\n")
	}
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatalf("%s has no ```sh block under ## docrepoctl", operationsPage)
	}
	var out []string
	for _, line := range strings.Split(block, "\n") {
		rest, ok := strings.CutPrefix(line, "docrepoctl ")
		if !ok {
			continue
		}
		rest, _, _ = strings.Cut(rest, "#")
		out = append(out, strings.TrimSpace(rest))
	}
	return out
}

// TestOperationsPageListsEveryCommand keeps docs/operations.md's command
// list equal to the usage text, line for line (flags included): a command
// added, renamed or given a flag in one and not the other fails here.
func TestOperationsPageListsEveryCommand(t *testing.T) {
	want, got := usageSynopses(t), pageSynopses(t)
	if len(want) < 20 {
		t.Fatalf("read %d commands from the usage text, want all of them: %q", len(want), want)
	}
	for _, s := range want {
		if !slices.Contains(got, s) {
			t.Errorf("%s does not list `docrepoctl %s`", operationsPage, s)
		}
	}
	for _, s := range got {
		if !slices.Contains(want, s) {
			t.Errorf("%s lists `docrepoctl %s`, which the usage text does not", operationsPage, s)
		}
	}
}

// TestUsageListsEveryDispatchedCommand: a command registered in
// deployCommands (deploy.go and the init functions beside it) appears in
// the usage text, so the page cannot miss it either.
func TestUsageListsEveryDispatchedCommand(t *testing.T) {
	var first []string
	for _, s := range usageSynopses(t) {
		first = append(first, strings.Fields(s)[0])
	}
	for name := range deployCommands {
		if !slices.Contains(first, name) {
			t.Errorf("command %q is dispatched but not in the usage text", name)
		}
	}
}
