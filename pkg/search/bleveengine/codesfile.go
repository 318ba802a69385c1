package bleveengine

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/docrepo/docrepo/pkg/search/ann"
)

// The int8 codes of a set (ann.Codes) are persisted in c-<dim>.codes and
// m-<dim>.codes beside the vector files, so that a start reads them
// instead of quantising every full-precision vector again (issue 23: at a
// million documents the quantisation read 6 GB of vector files at open).
// The file is a header and then one record per full block of the codes
// (ann.BlockRecordSize: the block's codes in the set's layout, its
// scales and norms, a CRC-32 of each record), in block order. The header
// (codesHeaderSize bytes): the magic, dim and lanes (uint32), the
// checkpoint seq (uint64), the CRC-32 of that checkpoint's STATE
// (uint32), the number of blocks the checkpoint vouches for (uint32),
// then in version 2 the layout (one byte), zeros, and a CRC-32 of the
// header's first 60 bytes. Version 1 ("DRCODE1\n", before the layouts)
// is laid out by dimension; a set laid out by dimension still writes it
// (a binary from before reads it), one laid out by vector (the codes of
// dense embedders' sets) writes version 2 ("DRCODE2\n"). A file of the
// other layout than its set's (a dense set's file from before) is
// converted as it is read, and the file started again in the set's
// layout: the next checkpoint writes every full block (the one Open
// starts when there are many).
//
// Writes: a checkpoint appends the records of the blocks that became full
// since the last one (and writes again those of erased blocks), syncs the
// file, then writes the header naming the new STATE, then STATE (vecfile.go).
// Erasures rewrite the erased blocks' records when they are synced
// (syncErased), so no code of an erased vector stays in the file either.
//
// Reads: the header must name the checkpoint read (same seq, same STATE
// checksum) and no more blocks than the checkpoint's vectors: the blocks
// of vectors that an older binary, or a crash, may have cut and written
// again since are never loaded (vectors below a checkpoint's count are
// never rewritten, only erased). A record that fails its check is
// quantised again from the vector file, as is everything after the
// vouched blocks; a missing or stale file is rebuilt whole, and written
// at the next checkpoint (or by the one Open starts when much was built).
// Erasures that reached the vector file but not the codes (a crash
// between the two, or a binary that does not know the codes file) are
// caught at open: every vector no document owns is quantised again from
// its file and its block rewritten when its code differs (refreshUnowned).

const codesHeaderSize = 64

var (
	codesMagic   = []byte("DRCODE1\n")
	codesMagicV2 = []byte("DRCODE2\n")
)

// codesCheckpointAt is the number of vectors whose codes an Open
// quantised (in full blocks) from which it starts a checkpoint at once.
var codesCheckpointAt = checkpointEvery

// persistCodes: whether sets on disk keep their codes in a file (read
// by each Open). Tests and the start-up benchmark switch it off to open
// and write as before codes files existed (every code quantised from the
// vector files at open, codes files left as they are).
var persistCodes = true

// codesFile is a set's codes file. Guarded by vecMu.
type codesFile struct {
	f      *os.File
	recLen int
	// blocks is the number of block records the file holds (those its
	// header vouches for, then those a checkpoint appends).
	blocks int
	// dirty lists blocks below blocks whose record is to be written
	// again (erased, or damaged at open).
	dirty map[int]bool
	// loaded is the number of blocks open loaded from records; read
	// the number of blocks open read records of (loaded or damaged: the
	// vectors refreshUnowned checks), which the file holds unless they
	// were converted from another layout.
	loaded, read int
}

func (vx *vecIndex) codesPath(k setKey) string {
	return strings.TrimSuffix(vx.storePath(k), ".f32") + ".codes"
}

// codesHeader is the header of a codes file.
type codesHeader struct {
	dim, lanes int
	seq        uint64
	stateSum   uint32
	blocks     int
	layout     ann.Layout
}

func (h codesHeader) encode() []byte {
	magic := codesMagic
	if h.layout != ann.ByDimension {
		magic = codesMagicV2
	}
	b := append(make([]byte, 0, codesHeaderSize), magic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.dim))
	b = binary.LittleEndian.AppendUint32(b, uint32(h.lanes))
	b = binary.LittleEndian.AppendUint64(b, h.seq)
	b = binary.LittleEndian.AppendUint32(b, h.stateSum)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.blocks))
	if h.layout != ann.ByDimension {
		b = append(b, byte(h.layout))
	}
	b = append(b, make([]byte, codesHeaderSize-4-len(b))...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeCodesHeader(b []byte) (codesHeader, bool) {
	if len(b) != codesHeaderSize ||
		crc32.Checksum(b[:codesHeaderSize-4], castagnoli) != binary.LittleEndian.Uint32(b[codesHeaderSize-4:]) {
		return codesHeader{}, false
	}
	layout := ann.ByDimension
	switch string(b[:len(codesMagic)]) {
	case string(codesMagic):
	case string(codesMagicV2):
		layout = ann.Layout(b[32])
		if layout != ann.ByDimension && layout != ann.ByVector && layout != ann.ByVector128 {
			return codesHeader{}, false
		}
	default:
		return codesHeader{}, false
	}
	u := func(off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
	return codesHeader{
		dim: int(u(8)), lanes: int(u(12)),
		seq:      binary.LittleEndian.Uint64(b[16:]),
		stateSum: u(24), blocks: int(u(28)),
		layout: layout,
	}, true
}

// openCodes fills set s's codes (empty) for its vectors: the blocks the
// codes file holds for the checkpoint read, then the rest quantised from
// the vector file. Without a usable file every code is quantised, and the
// file is started again. It returns the vectors whose codes were loaded
// and those quantised.
func (vx *vecIndex) openCodes(s *vecSet) (loaded, built int) {
	n := int(s.full.n.Load())
	L := s.codes.Lanes()
	workers := runtime.GOMAXPROCS(0)
	vecsFrom := func(first int) func(int32) []float32 {
		return func(i int32) []float32 { return s.full.vector(int32(first) + i) }
	}
	if !vx.persistCodes || s.full.f == nil {
		s.codes.AppendFrom(n, s.full.vector, workers)
		return 0, n
	}
	cf, h, err := openCodesFile(vx.codesPath(s.key), s.codes)
	if err != nil {
		slog.Warn("bleveengine: the vector codes are not kept on disk until the next start", "set", filepath.Base(vx.codesPath(s.key)), "error", err)
		s.codes.AppendFrom(n, s.full.vector, workers)
		return 0, n
	}
	s.cf = cf
	vouched := 0
	from := s.codes.Layout()
	if h != nil && vx.stateRead && h.seq == vx.seq && h.stateSum == vx.stateSum && h.blocks*L <= int(s.stateN) && h.blocks*L <= n {
		vouched, from = h.blocks, h.layout
	}
	// The records the header vouches for, in order; the file is cut
	// after them (records a crashed checkpoint appended are written
	// again by the next).
	r := bufio.NewReaderSize(io.NewSectionReader(cf.f, codesHeaderSize, int64(vouched)*int64(cf.recLen)), 1<<20)
	rec := make([]byte, cf.recLen) // AppendBlock copies it
	for bi := range vouched {
		if _, err := io.ReadFull(r, rec); err == nil && s.codes.AppendBlockFrom(rec, from) == nil {
			cf.loaded++
			continue
		}
		s.codes.AppendFrom(L, vecsFrom(bi*L), 1)
		cf.dirty[bi] = true
	}
	cf.read = vouched
	if from != s.codes.Layout() {
		// Records of the other layout, converted: the file starts again
		// in the set's, and the next checkpoint writes every block.
		slog.Info("bleveengine: vector codes converted to the set's layout", "set", filepath.Base(vx.codesPath(s.key)), "from", from, "to", s.codes.Layout(), "blocks", vouched)
		vouched = 0
		clear(cf.dirty)
	}
	cf.blocks = vouched
	want := codesHeader{dim: s.key.dim, lanes: L, seq: vx.seq, stateSum: vx.stateSum, blocks: vouched, layout: s.codes.Layout()}
	if err := cf.f.Truncate(codesHeaderSize + int64(vouched)*int64(cf.recLen)); err != nil {
		vx.dropCodesFile(s, err)
	} else if h == nil || *h != want {
		// A stale header would vouch for records the file no longer
		// holds: it names the checkpoint read and the blocks loaded.
		if _, err := cf.f.WriteAt(want.encode(), 0); err != nil {
			vx.dropCodesFile(s, err)
		}
	}
	rest := n - cf.read*L
	s.codes.AppendFrom(rest, vecsFrom(cf.read*L), workers)
	return cf.loaded * L, n - cf.loaded*L
}

// openCodesFile opens (creating) a codes file for codes' dimension and
// width; the header is nil when the file has none that fits.
func openCodesFile(path string, codes *ann.Codes) (*codesFile, *codesHeader, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	cf := &codesFile{f: f, recLen: ann.BlockRecordSize(codes.Dim(), codes.Lanes()), dirty: map[int]bool{}}
	b := make([]byte, codesHeaderSize)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, codesHeaderSize), b); err != nil {
		return cf, nil, nil
	}
	h, ok := decodeCodesHeader(b)
	if !ok || h.dim != codes.Dim() || h.lanes != codes.Lanes() {
		return cf, nil, nil
	}
	return cf, &h, nil
}

// newCodesFile starts the codes file of a new set (a file an earlier run
// left is emptied).
func (vx *vecIndex) newCodesFile(s *vecSet) {
	if !vx.persistCodes || s.full.f == nil {
		return
	}
	cf, _, err := openCodesFile(vx.codesPath(s.key), s.codes)
	if err == nil {
		err = cf.f.Truncate(0)
	}
	if err != nil {
		if cf != nil {
			cf.f.Close()
		}
		slog.Warn("bleveengine: the vector codes are not kept on disk until the next start", "set", filepath.Base(vx.codesPath(s.key)), "error", err)
		return
	}
	s.cf = cf
}

// dropCodesFile stops keeping s's codes on disk after err (the file is
// removed: the next start quantises every code again).
func (vx *vecIndex) dropCodesFile(s *vecSet, err error) {
	if s.cf == nil {
		return
	}
	slog.Warn("bleveengine: the vector codes are not kept on disk until the next start", "set", filepath.Base(vx.codesPath(s.key)), "error", err)
	s.cf.f.Close()
	_ = os.Remove(vx.codesPath(s.key))
	s.cf = nil
}

// writeDirtyCodes writes the records of the erased (or damaged) blocks
// the file holds again and syncs them.
func (vx *vecIndex) writeDirtyCodes(s *vecSet) error {
	cf := s.cf
	if cf == nil || len(cf.dirty) == 0 {
		return nil
	}
	buf := make([]byte, 0, cf.recLen)
	for bi := range cf.dirty {
		if bi < cf.blocks {
			buf = s.codes.AppendBlockRecord(buf[:0], bi)
			if _, err := cf.f.WriteAt(buf, codesHeaderSize+int64(bi)*int64(cf.recLen)); err != nil {
				return fmt.Errorf("write vector codes: %w", err)
			}
		}
	}
	clear(cf.dirty)
	if err := cf.f.Sync(); err != nil {
		return fmt.Errorf("write vector codes: %w", err)
	}
	return nil
}

// appendCodes writes the records of the blocks that became full since
// the file's last one, and the dirty ones, and syncs the file: a
// checkpoint's first step (its header follows once STATE's checksum is
// known).
func (vx *vecIndex) appendCodes(s *vecSet) error {
	cf := s.cf
	if cf == nil {
		return nil
	}
	if err := vx.writeDirtyCodes(s); err != nil {
		return err
	}
	full := s.codes.FullBlocks()
	if full <= cf.blocks {
		return nil
	}
	w := bufio.NewWriterSize(io.NewOffsetWriter(cf.f, codesHeaderSize+int64(cf.blocks)*int64(cf.recLen)), 1<<20)
	buf := make([]byte, 0, cf.recLen)
	for bi := cf.blocks; bi < full; bi++ {
		buf = s.codes.AppendBlockRecord(buf[:0], bi)
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("write vector codes: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write vector codes: %w", err)
	}
	if err := cf.f.Sync(); err != nil {
		return fmt.Errorf("write vector codes: %w", err)
	}
	cf.blocks = full
	return nil
}

// vouchCodes writes the header naming checkpoint seq, whose STATE has
// checksum sum, and syncs it.
func (vx *vecIndex) vouchCodes(s *vecSet, seq uint64, sum uint32) error {
	cf := s.cf
	if cf == nil {
		return nil
	}
	h := codesHeader{dim: s.key.dim, lanes: s.codes.Lanes(), seq: seq, stateSum: sum, blocks: cf.blocks, layout: s.codes.Layout()}
	if _, err := cf.f.WriteAt(h.encode(), 0); err != nil {
		return fmt.Errorf("write vector codes: %w", err)
	}
	if err := cf.f.Sync(); err != nil {
		return fmt.Errorf("write vector codes: %w", err)
	}
	return nil
}

// codesBehind returns the vectors of full blocks the codes files do not
// hold yet.
func (vx *vecIndex) codesBehind() int {
	n := 0
	for _, s := range vx.sets {
		if s.cf != nil {
			n += (s.codes.FullBlocks() - s.cf.blocks) * s.codes.Lanes()
		}
	}
	return n
}

// refreshUnowned quantises again, from the vector files, the vectors no
// document owns whose codes were loaded from a file, and marks the blocks
// whose codes that changed (see above). The caller holds vecMu and mu.
func (vx *vecIndex) refreshUnowned() int {
	changed := 0
	for _, s := range vx.sets {
		if s.cf == nil || s.cf.loaded == 0 {
			continue
		}
		L := s.codes.Lanes()
		touched := false
		for id := range int32(s.cf.read * L) {
			if int(id) < len(s.owner) && s.owner[id] >= 0 {
				continue
			}
			touched = true
			if s.codes.Refresh(id, s.full.vector(id)) {
				s.cf.dirty[int(id)/L] = true
				changed++
			}
		}
		if touched {
			s.full.release()
		}
	}
	return changed
}

func (cf *codesFile) close() {
	if cf != nil {
		cf.f.Close()
	}
}
