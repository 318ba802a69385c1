package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/docrepo/docrepo/pkg/catalog"
)

// listFlag collects a repeated flag's values in order.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, " ") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

const columnSyntax = "NAME:TYPE[:LABEL[:OPT1|OPT2|...]]"

// parseColumn parses a grid column: NAME:TYPE[:LABEL[:OPT1|OPT2|...]]. An
// empty LABEL means the default one. Validation of the parts is the
// catalog's.
func parseColumn(s string) (catalog.ColumnSpec, error) {
	parts := strings.SplitN(s, ":", 4)
	if len(parts) < 2 {
		return catalog.ColumnSpec{}, fmt.Errorf("--column %q: want %s", s, columnSyntax)
	}
	c := catalog.ColumnSpec{Name: strings.TrimSpace(parts[0]), Type: catalog.ColumnType(strings.TrimSpace(parts[1]))}
	if len(parts) > 2 {
		c.Label = strings.TrimSpace(parts[2])
	}
	if len(parts) == 4 {
		for _, o := range strings.Split(parts[3], "|") {
			c.Options = append(c.Options, strings.TrimSpace(o))
		}
	}
	if c.Type == catalog.TypeSelect && len(parts) < 4 {
		return catalog.ColumnSpec{}, fmt.Errorf("--column %q: a select column needs its options: %s:select:[LABEL]:OPT1|OPT2", s, c.Name)
	}
	return c, nil
}

const linkSyntax = "[NAME=]TEMPLATE.COLUMN[:LABEL]"

// linkRE splits a link: the column is the first ".identifier" that is
// followed by the end or by ":LABEL", so template names may hold dots.
var linkRE = regexp.MustCompile(`^(?:([a-z][a-z0-9_]*)=)?(.+?)\.([a-z][a-z0-9_]*)(?::(.*))?$`)

// parseLink parses a gridlink column: [NAME=]TEMPLATE.COLUMN[:LABEL].
func parseLink(s string) (catalog.ColumnSpec, error) {
	m := linkRE.FindStringSubmatch(s)
	if m == nil {
		return catalog.ColumnSpec{}, fmt.Errorf("--link %q: want %s (COLUMN is a lower-case column name)", s, linkSyntax)
	}
	return catalog.ColumnSpec{
		Name:  m[1],
		Label: strings.TrimSpace(m[4]),
		Link:  &catalog.ColumnRef{Template: m[2], Column: m[3]},
	}, nil
}

func (e env) templateCreate(args []string) error {
	var kind string
	var columns, links listFlag
	pos, err := parseArgs("template create", args, func(fs *flag.FlagSet) {
		fs.StringVar(&kind, "kind", string(catalog.KindGrid), "grid or gridlink")
		fs.Var(&columns, "column", "grid column "+columnSyntax+" (repeatable)")
		fs.Var(&links, "link", "gridlink column "+linkSyntax+" (repeatable)")
	})
	if err != nil {
		return err
	}
	if err := exactly("template create", pos, 1); err != nil {
		return err
	}
	spec := catalog.TemplateSpec{Name: pos[0], Kind: catalog.Kind(kind)}
	switch spec.Kind {
	case catalog.KindGrid:
		if len(links) > 0 {
			return errors.New("template create: --link needs --kind gridlink")
		}
		if len(columns) == 0 {
			return fmt.Errorf("template create: a grid template needs at least one --column %s", columnSyntax)
		}
		for _, c := range columns {
			cs, err := parseColumn(c)
			if err != nil {
				return fmt.Errorf("template create: %w", err)
			}
			spec.Columns = append(spec.Columns, cs)
		}
	case catalog.KindGridLink:
		if len(columns) > 0 {
			return errors.New("template create: a gridlink template takes --link, not --column")
		}
		if len(links) == 0 {
			return fmt.Errorf("template create: a gridlink template needs at least one --link %s", linkSyntax)
		}
		for _, l := range links {
			cs, err := parseLink(l)
			if err != nil {
				return fmt.Errorf("template create: %w", err)
			}
			spec.Columns = append(spec.Columns, cs)
		}
	default:
		return fmt.Errorf("template create: --kind %q: grid or gridlink", kind)
	}
	t, err := catalog.NewStore(e.pool).CreateTemplate(e.ctx, spec)
	if err != nil {
		return fmt.Errorf("template create: %w", err)
	}
	fmt.Fprintf(e.stdout, "template %d %s (%s)\n", t.ID, t.Name, t.Kind)
	return writeColumns(e.stdout, t, e.linkNames(t))
}

// linkNames maps the ids of templates t links to onto their names.
func (e env) linkNames(t catalog.Template) map[int64]catalog.Template {
	out := map[int64]catalog.Template{}
	for _, c := range t.Columns {
		if c.LinkedTemplateID == 0 {
			continue
		}
		if _, ok := out[c.LinkedTemplateID]; ok {
			continue
		}
		if lt, err := catalog.NewStore(e.pool).Template(e.ctx, c.LinkedTemplateID); err == nil {
			out[lt.ID] = lt
		}
	}
	return out
}

// linkText describes the Grid column c links to: "TEMPLATE.COLUMN".
func linkText(c catalog.Column, linked map[int64]catalog.Template) string {
	if c.LinkedTemplateID == 0 {
		return "-"
	}
	lt, ok := linked[c.LinkedTemplateID]
	if !ok {
		return fmt.Sprintf("template %d column %d", c.LinkedTemplateID, c.LinkedColumnID)
	}
	lc, ok := lt.Column(c.LinkedColumnID)
	if !ok {
		return fmt.Sprintf("%s column %d", lt.Name, c.LinkedColumnID)
	}
	return lt.Name + "." + lc.Name
}

// writeColumns prints a template's columns as a table, with the catalogue
// field name of each (the field_name of GET /apiv2/pub/schema/values).
func writeColumns(w io.Writer, t catalog.Template, linked map[int64]catalog.Template) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tNAME\tTYPE\tLABEL\tOPTIONS\tLINK\tFIELD")
	for _, c := range t.Columns {
		opts := "-"
		if len(c.Options) > 0 {
			opts = strings.Join(c.Options, "|")
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.Name, c.Type, c.Label, opts, linkText(c, linked), c.FieldName())
	}
	return tw.Flush()
}

func (e env) templateList(args []string) error {
	if err := exactly("template list", args, 0); err != nil {
		return err
	}
	ts, err := catalog.NewStore(e.pool).Templates(e.ctx)
	if err != nil {
		return err
	}
	byID := make(map[int64]catalog.Template, len(ts))
	for _, t := range ts {
		byID[t.ID] = t
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tNAME\tCOLUMNS")
	for _, t := range ts {
		cols := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			switch {
			case c.LinkedTemplateID != 0:
				cols[i] = c.Name + "->" + linkText(c, byID)
			case c.Type == catalog.TypeSelect:
				cols[i] = fmt.Sprintf("%s:%s(%s)", c.Name, c.Type, strings.Join(c.Options, "|"))
			default:
				cols[i] = c.Name + ":" + string(c.Type)
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", t.ID, t.Kind, t.Name, strings.Join(cols, " "))
	}
	return tw.Flush()
}

func (e env) templateShow(args []string) error {
	if err := exactly("template show", args, 1); err != nil {
		return err
	}
	t, err := catalog.NewStore(e.pool).TemplateByName(e.ctx, args[0])
	if err != nil {
		return fmt.Errorf("template show %s: %w", args[0], err)
	}
	fmt.Fprintf(e.stdout, "template %d %s (%s)\n", t.ID, t.Name, t.Kind)
	return writeColumns(e.stdout, t, e.linkNames(t))
}

func (e env) doctypeList(args []string) error {
	if err := exactly("doctype list", args, 0); err != nil {
		return err
	}
	ds, err := catalog.NewStore(e.pool).DocTypes(e.ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME")
	for _, d := range ds {
		fmt.Fprintf(tw, "%d\t%s\n", d.ID, d.Name)
	}
	return tw.Flush()
}
