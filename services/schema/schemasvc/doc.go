// Package schemasvc is the schema service: document types, custom-field
// templates, the field catalogue (spec §4.9) and distinct field values
// (spec §4.10).
package schemasvc
