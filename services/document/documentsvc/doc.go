// Package documentsvc is the document service: documents, their files and
// versions, locks, doc numbers, folder assignments and custom-field values
// (spec §2.1–2.6, §4.1–4.4; DESIGN §4–§5).
package documentsvc
