// Package configref builds docs/configuration.md, the configuration
// reference, from the settings docrepo's commands register (pkg/config).
// It builds every command, asks each for its settings (-h, with an empty
// environment, so that the defaults are the code's), and renders the union.
// The page is written by `make config-docs` (pkg/cmd/configdoc) and
// compared with the committed one by gateway/deploytest.
package configref

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/launcher"
)

// Path is the page's path relative to the repository root.
const Path = "docs/configuration.md"

// FixCommand is how to bring the page up to date.
const FixCommand = "make config-docs"

// Commands are the commands whose settings the page documents, in the
// order the page names them: the processes a deployment runs, then the
// development tools.
var Commands = []string{"gateway", "document", "folder", "search", "schema", "indexer", "docrepoctl", "devstack", "devnats"}

// Command is one command's settings as its -h lists them.
type Command struct {
	Name string
	Vars []config.Var
}

// Collect builds Commands of the repository at root into dir and reads
// each one's settings.
func Collect(ctx context.Context, root, dir string) ([]Command, error) {
	bins, err := launcher.Build(ctx, root, dir, Commands...)
	if err != nil {
		return nil, err
	}
	out := make([]Command, 0, len(Commands))
	for _, name := range Commands {
		cmd := exec.CommandContext(ctx, bins[name], "-h")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // defaults, not this environment's values
		text, _ := cmd.CombinedOutput()                 // -h exits non-zero after printing its usage
		vars, err := config.ParseUsage(string(text))
		if err != nil {
			return nil, fmt.Errorf("%s -h: %w", name, err)
		}
		if len(vars) == 0 {
			return nil, fmt.Errorf("%s -h listed no settings:\n%s", name, text)
		}
		out = append(out, Command{Name: name, Vars: vars})
	}
	return out, nil
}

// setting is one variable across the commands that register it.
type setting struct {
	config.Var
	commands []string
	defaults map[string]string // by command
}

// merge joins the commands' settings by variable, in order of first
// registration. A variable must mean the same everywhere: the same flag,
// type and usage (the default may differ by command, as the gRPC listen
// address does); otherwise it is registered in more than one place.
func merge(cmds []Command) ([]*setting, error) {
	var order []*setting
	byEnv := map[string]*setting{}
	var errs []string
	for _, c := range cmds {
		for _, v := range c.Vars {
			s := byEnv[v.Env]
			if s == nil {
				s = &setting{Var: v, defaults: map[string]string{}}
				byEnv[v.Env] = s
				order = append(order, s)
			} else if s.Flag != v.Flag || s.Type != v.Type || s.Usage != v.Usage {
				errs = append(errs, fmt.Sprintf("%s means one thing in %s (-%s %s %q) and another in %s (-%s %s %q): register it in one function both call (see pkg/config)",
					v.Env, s.commands[0], s.Flag, s.Type, s.Usage, c.Name, v.Flag, v.Type, v.Usage))
				continue
			}
			s.commands = append(s.commands, c.Name)
			s.defaults[c.Name] = v.Default
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("configref: %s", strings.Join(errs, "\n"))
	}
	return order, nil
}

// Render returns the page for the commands' settings.
func Render(cmds []Command) (string, error) {
	settings, err := merge(cmds)
	if err != nil {
		return "", err
	}
	slices.SortFunc(settings, func(a, b *setting) int { return strings.Compare(a.Env, b.Env) })
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("| Variable | Flag | Default | Read by | Meaning |\n|---|---|---|---|---|\n")
	for _, s := range settings {
		fmt.Fprintf(&b, "| `%s` | `-%s` | %s | %s | %s |\n", s.Env, s.Flag, defaults(s), readBy(s.commands), cell(s.Usage))
	}
	b.WriteString(footer)
	return b.String(), nil
}

// readBy names the commands that read a setting, in short where it can.
func readBy(cmds []string) string {
	processes := Commands[:6] // the gateway and the five services
	for _, group := range []struct {
		name    string
		members []string
	}{{"every process", processes}, {"every service", processes[1:]}} {
		if !containsAll(cmds, group.members) {
			continue
		}
		parts := []string{group.name}
		for _, c := range cmds {
			if !slices.Contains(group.members, c) {
				parts = append(parts, c)
			}
		}
		return strings.Join(parts, ", ")
	}
	return strings.Join(cmds, ", ")
}

func containsAll(set, members []string) bool {
	for _, m := range members {
		if !slices.Contains(set, m) {
			return false
		}
	}
	return true
}

// defaults renders a setting's default: one value, or one per command when
// they differ.
func defaults(s *setting) string {
	first := s.defaults[s.commands[0]]
	same := true
	for _, c := range s.commands {
		same = same && s.defaults[c] == first
	}
	if same {
		return value(first, s.Type)
	}
	parts := make([]string, 0, len(s.commands))
	for _, c := range s.commands {
		parts = append(parts, value(s.defaults[c], s.Type)+" ("+c+")")
	}
	return strings.Join(parts, ", ")
}

func value(v, typ string) string {
	if v == "" {
		return "—"
	}
	if typ == "duration" {
		// As people write them: 1m0s -> 1m, 1h0m0s -> 1h.
		if strings.HasSuffix(v, "m0s") {
			v = strings.TrimSuffix(v, "0s")
		}
		if strings.HasSuffix(v, "h0m") {
			v = strings.TrimSuffix(v, "0m")
		}
	}
	return "`" + v + "`"
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}

const header = `# Configuration reference

<!-- Generated by ` + "`" + FixCommand + "`" + ` (go run ./pkg/cmd/configdoc) from the settings each
command registers in code (pkg/config); do not edit. gateway/deploytest fails when it is stale. -->

Every setting is an environment variable or the command-line flag beside it
(flags win; ` + "`COMMAND -h`" + ` lists a command's settings with the values it
would use). Durations are Go durations (` + "`90s`, `5m`, `1h30m`" + `); sizes are
bytes. "Every process" is the gateway and the five services; "every
service" the five services (document, folder, search, schema, indexer).

`

const footer = `
## Read by other software

| Variable | Read by | Meaning |
|---|---|---|
| ` + "`OTEL_EXPORTER_OTLP_ENDPOINT`" + ` and the other standard ` + "`OTEL_*`" + ` | the OpenTelemetry SDK in every process | configure the OTLP exporters of ` + "`DOCREPO_TRACING_EXPORTER`" + ` |

## Adding a setting

Register it once, on a ` + "`config.Loader`" + ` in the ` + "`Register`" + ` method of the
command's Config (or of the Settings of the package that reads it, such as
` + "`indexing.Settings`" + `), with a usage that says what it means and its unit; a
setting several commands share is registered by one function they all call.
Then run ` + "`" + FixCommand + "`" + ` and commit this page with the change.
`
