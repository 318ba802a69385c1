package catalog

import (
	"fmt"
	"regexp"
	"strconv"
)

// DocumentFieldPrefix starts the catalogue name of a document metadata
// column: "Documents.doc_type".
const DocumentFieldPrefix = "Documents."

// FieldName is the catalogue name of a custom-field column (docs/api.md §2.7):
// "customfields_grid_<template id>.cfield_<column id>".
func FieldName(templateID, columnID int64) string {
	return fmt.Sprintf("customfields_grid_%d.cfield_%d", templateID, columnID)
}

// DocumentFieldName is the catalogue name of a document metadata column.
func DocumentFieldName(column string) string { return DocumentFieldPrefix + column }

// FieldRef is a parsed catalogue field name: either a document column or a
// custom-field template column.
type FieldRef struct {
	// DocumentColumn is set for "Documents.<col>" names.
	DocumentColumn string
	// TemplateID and ColumnID are set for custom-field names.
	TemplateID int64
	ColumnID   int64
}

var (
	documentFieldRE = regexp.MustCompile(`^Documents\.([A-Za-z_][A-Za-z0-9_]*)$`)
	customFieldRE   = regexp.MustCompile(`^customfields_grid_([1-9][0-9]{0,18})\.cfield_([1-9][0-9]{0,18})$`)
)

// ParseFieldName parses a catalogue field name. It reports false for a name
// of neither form: "Documents." followed by an identifier, or
// "customfields_grid_<id>.cfield_<id>" with positive decimal ids without
// leading zeros that fit in an int64. Whether the named column exists is not
// checked.
func ParseFieldName(name string) (FieldRef, bool) {
	if m := documentFieldRE.FindStringSubmatch(name); m != nil {
		return FieldRef{DocumentColumn: m[1]}, true
	}
	m := customFieldRE.FindStringSubmatch(name)
	if m == nil {
		return FieldRef{}, false
	}
	tid, err1 := strconv.ParseInt(m[1], 10, 64)
	cid, err2 := strconv.ParseInt(m[2], 10, 64)
	if err1 != nil || err2 != nil {
		return FieldRef{}, false
	}
	return FieldRef{TemplateID: tid, ColumnID: cid}, true
}
