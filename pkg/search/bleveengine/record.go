package bleveengine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// String metadata fields, in the order of record.str.
const (
	sDescription = iota
	sDocNumber
	sDocType
	sDocStatus
	sReferenceNumber
	sFromEntity
	sToEntity
	sEntryPerson
	sRevNumber
	sSubdoctype
	numStrings
)

// stringFields maps the dsl names of the string fields to their index.
var stringFields = map[string]int{
	"description":      sDescription,
	"doc_number":       sDocNumber,
	"doc_type":         sDocType,
	"doc_status":       sDocStatus,
	"reference_number": sReferenceNumber,
	"from_entity":      sFromEntity,
	"to_entity":        sToEntity,
	"entry_person":     sEntryPerson,
	"rev_number":       sRevNumber,
	"subdoctype":       sSubdoctype,
}

// record is what the engine keeps in memory of a document: everything but
// its content. A deleted record is a tombstone: only id and rev are kept,
// so an older write arriving later is recognised as stale.
type record struct {
	id      int64
	rev     int64
	deleted bool

	groups  []int64 // sorted, unique
	folders []int64 // sorted, unique

	strSet uint16 // bit i: str[i] present
	str    [numStrings]string
	lower  [numStrings]string // strings.ToLower(str[i]), for contains/startswith

	date, entryDate       time.Time
	hasDate, hasEntryDate bool
	privileged, locked    bool
	// pending: the content's vectors are still to come (VectorStage).
	pending bool

	// cvec holds the content's passage vectors back to back, cdim values
	// each; mvec is the metadata vector. Nil when absent, and always in
	// the table: a record carries them from a write (or the index, at
	// open) to the vector index (vectors.go), which keeps them.
	cvec []float32
	cdim int
	mvec []float32
	// keepVectors: read at open, its vectors are those the vector index
	// holds already (cvec and mvec are then nil, not decoded).
	keepVectors bool

	// lens are the content's token counts in the stemmed, exact and grams
	// fields (for BM25's average field length); hasLens is false for
	// records written by format 1, which did not keep them.
	lens    [numLenFields]int32
	hasLens bool
}

// Indexes of record.lens.
const (
	lenStem = iota
	lenExact
	lenGrams
	numLenFields
)

func (r *record) has(i int) bool { return r.strSet&(1<<i) != 0 }

// flattenPassages puts passage vectors back to back. They must all have
// the same length; empty ones are an error too (nil for no passages).
func flattenPassages(vs [][]float32) ([]float32, int, error) {
	if len(vs) == 0 {
		return nil, 0, nil
	}
	dim := len(vs[0])
	out := make([]float32, 0, dim*len(vs))
	for i, v := range vs {
		if len(v) != dim || dim == 0 {
			return nil, 0, fmt.Errorf("content passage %d has %d values, passage 0 has %d", i, len(v), dim)
		}
		out = append(out, v...)
	}
	return out, dim, nil
}

// recordFromDocument converts a document to its record. Its passage
// vectors must have one length (checkDocument).
func recordFromDocument(d *engine.Document) record {
	r := record{
		id:         d.ID,
		rev:        d.Rev,
		groups:     engine.SortedIDs(d.GroupIDs),
		folders:    engine.SortedIDs(d.FolderIDs),
		privileged: d.Privileged,
		locked:     d.IsLocked,
		mvec:       cloneVec(d.MetadataVector),
	}
	r.cvec, r.cdim, _ = flattenPassages(d.ContentVectors)
	r.pending = d.VectorsPending && r.cvec == nil && d.Content != ""
	set := func(i int, v *string) {
		if v != nil {
			r.setString(i, *v)
		}
	}
	set(sDescription, d.Description)
	set(sDocNumber, d.DocNumber)
	set(sDocType, d.DocType)
	set(sDocStatus, d.DocStatus)
	set(sReferenceNumber, d.ReferenceNumber)
	set(sFromEntity, d.FromEntity)
	set(sToEntity, d.ToEntity)
	set(sEntryPerson, d.EntryPerson)
	set(sRevNumber, d.RevNumber)
	set(sSubdoctype, d.Subdoctype)
	if d.Date != nil {
		r.date, r.hasDate = d.Date.UTC(), true
	}
	if d.EntryDate != nil {
		r.entryDate, r.hasEntryDate = d.EntryDate.UTC(), true
	}
	return r
}

func (r *record) setString(i int, v string) {
	r.strSet |= 1 << i
	r.str[i] = v
	r.lower[i] = strings.ToLower(v)
}

func cloneVec(v []float32) []float32 {
	if len(v) == 0 {
		return nil
	}
	return slices.Clone(v)
}

// Record encoding (stored field "m"), version 2 (version 1 lacks the
// lengths):
//
//	byte version
//	uvarint flags (flag* bits)
//	varint rev
//	uvarint n, n × varint group id
//	uvarint n, n × varint folder id
//	uvarint strSet, then per set bit: uvarint length, bytes
//	if flagDate: varint unix seconds, uvarint nanoseconds; same for entry date
//	3 × uvarint content lengths (stemmed, exact, grams)
const (
	recordVersion   = 2
	recordVersionV1 = 1
)

const (
	flagDeleted = 1 << iota
	flagPrivileged
	flagLocked
	flagDate
	flagEntryDate
	flagPending
)

func encodeRecord(r *record) []byte {
	b := make([]byte, 0, 64)
	b = append(b, recordVersion)
	var flags uint64
	if r.deleted {
		flags |= flagDeleted
	}
	if r.privileged {
		flags |= flagPrivileged
	}
	if r.locked {
		flags |= flagLocked
	}
	if r.hasDate {
		flags |= flagDate
	}
	if r.hasEntryDate {
		flags |= flagEntryDate
	}
	if r.pending {
		flags |= flagPending
	}
	b = binary.AppendUvarint(b, flags)
	b = binary.AppendVarint(b, r.rev)
	for _, ids := range [][]int64{r.groups, r.folders} {
		b = binary.AppendUvarint(b, uint64(len(ids)))
		for _, id := range ids {
			b = binary.AppendVarint(b, id)
		}
	}
	b = binary.AppendUvarint(b, uint64(r.strSet))
	for i := range numStrings {
		if r.has(i) {
			b = binary.AppendUvarint(b, uint64(len(r.str[i])))
			b = append(b, r.str[i]...)
		}
	}
	if r.hasDate {
		b = binary.AppendVarint(b, r.date.Unix())
		b = binary.AppendUvarint(b, uint64(r.date.Nanosecond()))
	}
	if r.hasEntryDate {
		b = binary.AppendVarint(b, r.entryDate.Unix())
		b = binary.AppendUvarint(b, uint64(r.entryDate.Nanosecond()))
	}
	for _, n := range r.lens {
		b = binary.AppendUvarint(b, uint64(n))
	}
	return b
}

var errCorrupt = errors.New("bleveengine: corrupt stored record")

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errCorrupt
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func decodeRecord(id int64, b []byte) (record, error) {
	if len(b) == 0 || b[0] != recordVersion && b[0] != recordVersionV1 {
		return record{}, fmt.Errorf("%w: unknown version", errCorrupt)
	}
	d := decoder{b: b[1:]}
	r := record{id: id}
	flags := d.uvarint()
	r.deleted = flags&flagDeleted != 0
	r.privileged = flags&flagPrivileged != 0
	r.locked = flags&flagLocked != 0
	r.hasDate = flags&flagDate != 0
	r.hasEntryDate = flags&flagEntryDate != 0
	r.pending = flags&flagPending != 0
	r.rev = d.varint()
	for _, dst := range []*[]int64{&r.groups, &r.folders} {
		n := d.uvarint()
		if n > uint64(len(d.b)) {
			return record{}, errCorrupt
		}
		if n > 0 {
			ids := make([]int64, n)
			for i := range ids {
				ids[i] = d.varint()
			}
			*dst = ids
		}
	}
	set := d.uvarint()
	for i := range numStrings {
		if set&(1<<i) != 0 {
			r.setString(i, string(d.bytes(d.uvarint())))
		}
	}
	if r.hasDate {
		sec := d.varint()
		r.date = time.Unix(sec, int64(d.uvarint())).UTC()
	}
	if r.hasEntryDate {
		sec := d.varint()
		r.entryDate = time.Unix(sec, int64(d.uvarint())).UTC()
	}
	if b[0] == recordVersion {
		for i := range r.lens {
			r.lens[i] = int32(d.uvarint())
		}
		r.hasLens = true
	}
	if d.err != nil {
		return record{}, d.err
	}
	return r, nil
}

// Vector encoding (stored field "w", format 3): a version byte, the
// content passages as uvarint count, uvarint dimension and count ×
// dimension little-endian float32, then the metadata vector as uvarint
// dimension and that many float32.
const vectorsVersion = 1

func encodePassageVectors(c []float32, cdim int, m []float32) []byte {
	b := make([]byte, 0, 8+4*(len(c)+len(m)))
	b = append(b, vectorsVersion)
	n := 0
	if cdim > 0 {
		n = len(c) / cdim
	}
	b = binary.AppendUvarint(b, uint64(n))
	b = binary.AppendUvarint(b, uint64(cdim))
	b = appendFloats(b, c)
	b = binary.AppendUvarint(b, uint64(len(m)))
	return appendFloats(b, m)
}

func appendFloats(b []byte, v []float32) []byte {
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

// floats reads n float32 values (nil for none).
func (d *decoder) floats(n uint64) []float32 {
	if n > uint64(len(d.b))/4 {
		d.err = errCorrupt
		return nil
	}
	raw := d.bytes(4 * n)
	if d.err != nil || n == 0 {
		return nil
	}
	v := make([]float32, n)
	for j := range v {
		v[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
	}
	return v
}

func decodePassageVectors(b []byte) (c []float32, cdim int, m []float32, err error) {
	if len(b) == 0 || b[0] != vectorsVersion {
		return nil, 0, nil, fmt.Errorf("%w: unknown vectors version", errCorrupt)
	}
	d := decoder{b: b[1:]}
	n, dim := d.uvarint(), d.uvarint()
	if d.err == nil && (dim == 0) != (n == 0) || dim > 0 && n > uint64(len(d.b))/4/dim {
		return nil, 0, nil, errCorrupt
	}
	c = d.floats(n * dim)
	m = d.floats(d.uvarint())
	if d.err == nil && len(d.b) > 0 {
		d.err = errCorrupt
	}
	if d.err != nil {
		return nil, 0, nil, d.err
	}
	return c, int(dim), m, nil
}

// Vector encoding of format 2 (stored field "v", still read): for the
// content then the metadata vector, uvarint dimension followed by that
// many little-endian float32. Its content vector is one passage.
func encodeVectors(c, m []float32) []byte {
	b := make([]byte, 0, 2+4*(len(c)+len(m)))
	for _, v := range [][]float32{c, m} {
		b = binary.AppendUvarint(b, uint64(len(v)))
		for _, f := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
		}
	}
	return b
}

func decodeVectors(b []byte) (c, m []float32, err error) {
	d := decoder{b: b}
	var out [2][]float32
	for i := range out {
		n := d.uvarint()
		if n > uint64(len(d.b))/4 {
			return nil, nil, errCorrupt
		}
		raw := d.bytes(4 * n)
		if d.err != nil {
			return nil, nil, d.err
		}
		if n > 0 {
			v := make([]float32, n)
			for j := range v {
				v[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
			}
			out[i] = v
		}
	}
	return out[0], out[1], nil
}
