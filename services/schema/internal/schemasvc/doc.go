// Package schemasvc is the schema service: document types, custom-field
// templates, the field catalogue (GET /apiv2/pub/schema/fields, docs/api.md §4.9)
// and distinct field values (GET /apiv2/pub/schema/values/{field_name},
// docs/api.md §4.10). It owns the doc_types, cf_templates and cf_columns tables
// (through pkg/catalog); document rows and custom-field values belong to the
// document service, which it calls for values.
//
// # Doc types and templates
//
// Doc types and templates are created by administrators with docrepoctl
// (doctype create, template create; see its usage) and are global: every
// key holding documents_read sees all of them in the catalogue. Only the
// values a field takes are limited to what the caller may see.
//
// A Grid template has typed columns: text, number, date, boolean or select
// (a select column has 1..200 distinct options). A GridLink template has
// columns that each link to a column of a Grid template; a GridLink column
// takes the linked column's type and options, and by default its name and
// label. Links may only target Grid templates (no chains). Column names are
// lower-case identifiers ([a-z][a-z0-9_]*, at most 63 characters) unique in
// their template; labels default to the name made readable ("invoice_no" →
// "Invoice no"); template names are unique, 1 to 100 characters. Templates
// are immutable once created: there is no command that edits or deletes
// them, so field names, once published, stay valid.
//
// The RPCs GetDocType and GetTemplate serve the document service (upload
// validation, custom-field values) and any caller with documents_read,
// documents_write or internal. GetDocType matches the name exactly
// (case-sensitively) and answers NotFound "Unknown doc_type: <name>", which
// the document service reports as 422. GetTemplate answers NotFound "Custom
// field template not found" for any id that names no template (0 and
// negative ids included).
//
// # The field catalogue
//
// GET /apiv2/pub/schema/fields returns a bare array of field definitions in
// a stable order: first the document metadata columns as "Documents.<col>",
// exactly the search metadata fields of docs/api.md §2.8 in that order (the list
// pkg/search/dsl filters on), then every template column as
// "customfields_grid_<template id>.cfield_<column id>" by template id and
// column position (Grid and GridLink templates alike). Each definition has:
//
//   - name, label (document columns have fixed English labels; a template
//     column's label is "<template name>: <column label>"), source
//     ("document" or "custom_field");
//   - valueEditorType: "text", "number", "date" or "select". Booleans
//     (privileged, islocked, boolean columns) are selects offering "true"
//     (label "Yes") and "false" ("No"); doc_type is a select over every
//     defined doc type; select columns offer their options. filesbelongto
//     (folder ids) is a number.
//   - values: only for selects, as [{name, label}] (extension, the shape
//     react-querybuilder takes); inputType: the HTML input type ("text",
//     "number", "date") for the other editors (extension);
//   - operators [{name, label}], from docs/api.md §2.7 in its order, by editor:
//     text: = != contains beginsWith endsWith doesNotContain; number and
//     date: = != > < >= <=; select: = !=; filesbelongto: = != (labelled
//     "includes" / "does not include": a document matches when one of its
//     folders does). Fields that can lack a value (nullable document
//     columns, every custom-field column) add null and notNull ("is empty",
//     "is not empty"). Labels are words ("does not equal", "is on or
//     after"), worded per editor.
//   - metadata, only for GridLink columns: template_id and field_own_id (the
//     linked Grid template and column), template_name, field_name and
//     field_label (of the linked column), linked_field (the linked column's
//     catalogue name) and gridlink_id / gridlink_name (the GridLink template
//     itself). Ids are JSON numbers.
//
// Operators describe what fits a field's type for a query-builder UI; the
// search DSL (POST /apiv2/pub/search) expresses =, !=, >, <, >=, <=,
// contains and beginsWith on document fields as eq, ne, gt, lt, gte, lte,
// contains and startswith. Custom fields are not searchable through the DSL.
//
// # Distinct values
//
// GET /apiv2/pub/schema/values/{field_name}?search=&limit= returns a bare
// array of distinct strings. Rules, in the order they are checked:
//
//   - A name of neither form — "Documents." followed by an identifier, or
//     "customfields_grid_<id>.cfield_<id>" with positive decimal ids without
//     leading zeros that fit in 64 bits — is 400 "Unrecognised field name
//     format: <name>".
//   - limit defaults to 100; outside 1..500 it is 400 "limit must be between
//     1 and 500" (a non-integer is 400 as well). search is optional, at most
//     255 characters, else 400.
//   - A well-formed name of a document column that is not in the catalogue
//     (Documents.salary, Documents.id) is 404 "Field not found: <name>": the
//     name has the right format but names nothing, as with an unknown
//     template.
//   - An unknown template is 404 "Custom field template not found"; a
//     column id that is not a column of that template is 404 "Custom field
//     column not found: template <t> has no column <c>".
//
// The values are read by the document service (ListDistinctValues) with the
// caller's own token, so they come only from documents the caller can see;
// a value carried only by another group's documents never appears. The
// document service leaves out missing and empty values, filters by search as
// a case-insensitive substring, sorts ascending (case-insensitively; custom
// number values numerically) and applies limit. Document dates come as
// YYYY-MM-DD (UTC), booleans as "true"/"false".
//
// Documents.doc_type lists the doc types of documents the caller can see, as
// the spec requires of all values; the catalogue's doc_type select lists
// every defined doc type, so a UI can offer types nobody has used yet.
//
// A GridLink column's values are those of the Grid column it links to (over
// the rows of the Grid template on documents the caller can see), not the
// values stored in GridLink rows: a GridLink column picks from the Grid
// column's values.
//
// # Custom-field values (REST extension, served by the document service)
//
// PUT /apiv3/pub/documents/{docID}/customfields/{template_id}
// [documents_write] replaces all of a document's rows of one template:
//
//	{"rows": [{"invoice_no": "INV-1", "amount": 9.5, "paid": true,
//	           "due": "2024-02-01", "status": "open"}, ...]}
//
// Rows map column names to values of the column's type: number a JSON
// number, boolean a JSON boolean, date "YYYY-MM-DD" or an RFC 3339
// date-time, select one of the options, text a string; null or an absent
// column means no value; an unknown column or a wrongly typed value is 400
// (a row's columns are checked in name order and the first problem is
// reported, so the same request always gets the same detail).
// GridLink columns take values of their linked column's type. An empty rows
// array removes the template's rows; "rows" itself is required (an empty
// body, {} or "rows": null is 400 `Missing required field: rows`, checked
// by the gateway, so a forgotten body never deletes rows), and doc_id and
// template_id come from the path only (in the body they are unknown fields). The answer is the set as stored:
// {"template_id", "template_name", "rows"}. A document the caller cannot see
// is 404, an unknown template 404 "Custom field template not found", a
// locked document 423.
//
// GET /apiv2/pub/documents/{doc_id}?include=customfields adds
// "customfields": an array of those sets, one per template the document has
// rows of, by template id; without the include the key is absent.
package schemasvc
