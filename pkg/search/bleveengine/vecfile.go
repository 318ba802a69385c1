package bleveengine

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/docrepo/docrepo/pkg/search/ann"
)

// Persistence of the vector index, in the directory "vectors" of the
// index directory (so a generation, and Reset, take it along):
//
//   - c-<dim>.f32, m-<dim>.f32: each set's full-precision vectors
//     (fullStore), appended as documents are written;
//   - c-<dim>.<seq>.graph: a set's graph at checkpoint seq
//     (ann.Graph.WriteTo);
//   - STATE: the last checkpoint: its seq, each set's vector count and
//     whether it has a graph, and every document's vectors (id, and per
//     target dimension, first vector, count and stamp), with a CRC-32;
//   - log.<seq>: the changes after checkpoint seq (vlog.go);
//   - c-<dim>.codes, m-<dim>.codes: each set's int8 codes, block by
//     block, vouched for by the checkpoint (codesfile.go).
//
// A checkpoint syncs the vector files, writes the graphs under the next
// seq, appends the codes' new blocks and writes their header, then STATE
// aside and renames it over the old one, then starts the log of the new
// seq: a crash at any point leaves the previous checkpoint and its log
// whole (codes the header vouches for with another STATE are quantised
// again). It is taken every checkpointEvery appended vectors (which
// bounds the log a start replays), at Close, and once after an Open that
// had to quantise many codes.
//
// At open the checkpoint is read and its log replayed (vlog.go); then
// the bleve index is the truth: each document read from it whose vectors
// the replayed index holds with the same stamp gets them back; any other
// document (written after the last record replayed, or changed since)
// has its vectors appended again from its stored field, and vectors past
// the replayed counts are cut from the files first. A missing or damaged
// STATE (or vector file) starts the vector index empty (a missing STATE
// with a log of checkpoint 0 replays that log), and every other
// document's vectors are added from the bleve index: slower, never wrong.

const (
	vectorsDir = "vectors"
	stateFile  = "STATE"
	// checkpointEvery bounds the vectors a crash makes the next start add
	// again.
	checkpointEvery = 50000
)

var stateMagic = []byte("DRVEC1\n\x00")

// openVectors opens the vector index of the engine's directory (an empty
// one in memory).
func (e *Engine) openVectors() (*vecIndex, error) {
	if e.opts.InMemory {
		return newVecIndex("", e.opts.VectorGraph, e.codesLayout()), nil
	}
	dir := filepath.Join(e.dir, vectorsDir)
	vx := newVecIndex(dir, e.opts.VectorGraph, e.codesLayout())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bleveengine: %w", err)
	}
	err := vx.readState()
	if errors.Is(err, os.ErrNotExist) {
		// No checkpoint yet: the log of checkpoint 0 (from the empty
		// index) may hold everything written.
		if _, serr := os.Stat(vx.logPath(0)); serr == nil {
			err = nil
		}
	}
	if err == nil {
		err = vx.recover()
	}
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			slog.Warn("bleveengine: the vector index is rebuilt from the bleve index", "dir", dir, "error", err)
		}
		vx.close()
		if err := clearDir(dir); err != nil {
			return nil, fmt.Errorf("bleveengine: %w", err)
		}
		vx = newVecIndex(dir, e.opts.VectorGraph, e.codesLayout())
		if vx.log, err = openLog(vx.logPath(0), 0); err != nil {
			return nil, fmt.Errorf("bleveengine: %w", err)
		}
	}
	return vx, nil
}

// recover replays the log over the checkpoint read, cuts the vector
// files after the vectors kept, quantises them and opens the log for the
// writes to come.
func (vx *vecIndex) recover() error {
	valid, err := vx.replayLog()
	if err != nil {
		return err
	}
	for _, k := range vx.sortedKeys() {
		s := vx.sets[k]
		if err := s.full.cut(); err != nil {
			return err
		}
		if s.graph != nil && s.graph.Len() != int(s.full.n.Load()) {
			return fmt.Errorf("%w: a graph of %d nodes for %d vectors", errCorrupt, s.graph.Len(), s.full.n.Load())
		}
		// The codes of the checkpoint's blocks are read from their
		// file, the others quantised by both cores; then the vector
		// file's pages read leave the process's resident memory (they
		// stay in the page cache): searches map back only the vectors
		// they re-rank.
		t := time.Now()
		loaded, built := vx.openCodes(s)
		vx.codesLoaded += loaded
		vx.codesBuilt += built
		vx.codesTime += time.Since(t)
	}
	vx.checkLogged()
	for _, s := range vx.sets {
		s.full.release()
	}
	vx.log, err = openLog(vx.logPath(vx.seq), valid)
	return err
}

func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, en := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, en.Name())))
	}
	return errors.Join(errs...)
}

// seq is the checkpoint the index was read from or last wrote.
func (vx *vecIndex) graphPath(k setKey, seq uint64) string {
	return strings.TrimSuffix(vx.storePath(k), ".f32") + "." + strconv.FormatUint(seq, 10) + ".graph"
}

// readState loads the last checkpoint.
func (vx *vecIndex) readState() error {
	data, err := os.ReadFile(filepath.Join(vx.dir, stateFile))
	if err != nil {
		return err
	}
	if len(data) < len(stateMagic)+4 || string(data[:len(stateMagic)]) != string(stateMagic) {
		return fmt.Errorf("%s: %w", stateFile, errCorrupt)
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) != sum {
		return fmt.Errorf("%s: %w: checksum", stateFile, errCorrupt)
	}
	vx.stateRead, vx.stateSum = true, sum
	d := decoder{b: body[len(stateMagic):]}
	vx.seq = d.uvarint()
	nsets := d.uvarint()
	if nsets > 1024 {
		return errCorrupt
	}
	for range nsets {
		metadata := d.uvarint() == 1
		dim := int(d.uvarint())
		n := int64(d.uvarint())
		hasGraph := d.uvarint() == 1
		if d.err != nil || dim <= 0 || dim > 1<<16 || n > 1<<31 {
			return fmt.Errorf("%s: %w", stateFile, errCorrupt)
		}
		k := setKey{metadata: metadata, dim: dim}
		s := &vecSet{key: k, codes: ann.NewCodesLayout(dim, vx.layout), stateN: n}
		full, err := openFileStore(vx.storePath(k), dim, n)
		if err != nil {
			return err
		}
		s.full = full
		vx.sets[k] = s
		if hasGraph {
			if s.graph, err = vx.readGraph(s); err != nil {
				return err
			}
		}
	}
	ndocs := d.uvarint()
	if d.err != nil || ndocs > uint64(len(d.b)) {
		return fmt.Errorf("%s: %w", stateFile, errCorrupt)
	}
	for range ndocs {
		id := d.varint()
		dv := decodeDocVecs(&d)
		for _, metadata := range []bool{false, true} {
			r := dv.ref(metadata)
			if r.dim == 0 {
				continue
			}
			s := vx.sets[setKey{metadata, int(r.dim)}]
			if s == nil || int64(r.first)+int64(r.n) > s.full.n.Load() || r.n <= 0 {
				return fmt.Errorf("%s: %w: document %d", stateFile, errCorrupt, id)
			}
		}
		vx.docs[id] = dv
	}
	if d.err != nil || len(d.b) != 0 {
		return fmt.Errorf("%s: %w", stateFile, errCorrupt)
	}
	return nil
}

// readGraph reads a set's graph of the checkpoint; a missing or damaged
// one is built again from the vectors.
func (vx *vecIndex) readGraph(s *vecSet) (*ann.Graph, error) {
	cfg := ann.Config{Shard: graphShard, Seed: uint64(s.key.dim)}
	f, err := os.Open(vx.graphPath(s.key, vx.seq))
	if err == nil {
		defer f.Close()
		g, err := ann.ReadGraph(f, s.full.vector, cfg)
		if err == nil && g.Len() == int(s.full.n.Load()) && g.Dim() == s.key.dim {
			return g, nil
		}
	}
	slog.Warn("bleveengine: rebuilding a vector graph", "set", filepath.Base(vx.storePath(s.key)), "vectors", s.full.n.Load(), "error", err)
	s.rebuilt = true
	// The shards are built at once, one per core: at 1 M vectors one by
	// one is ten shards' worth of ~10 minutes of a core each.
	return ann.Build(s.key.dim, int(s.full.n.Load()), s.full.vector, cfg, runtime.GOMAXPROCS(0)), nil
}

// maybeCheckpoint writes a checkpoint when enough vectors were appended
// since the last one. The caller holds writeMu.
func (e *Engine) maybeCheckpoint() error {
	if e.vecs.dir == "" || e.vecs.appended < checkpointEvery {
		return nil
	}
	return e.checkpoint()
}

// checkpoint writes the vector index's state (see above). The caller
// holds writeMu.
func (e *Engine) checkpoint() error {
	e.vecMu.Lock()
	defer e.vecMu.Unlock()
	vx := e.vecs
	if vx.dir == "" {
		return nil
	}
	if err := vx.checkpoint(); err != nil {
		return fmt.Errorf("checkpoint the vector index: %w", err)
	}
	return nil
}

func (vx *vecIndex) checkpoint() error {
	if vx.dir == "" || vx.appended == 0 && vx.seq > 0 && vx.codesBehind() == 0 {
		// Nothing new: the last checkpoint holds every vector and the
		// codes files every full block. (Deletes and rebinds need none:
		// owners follow the bleve index at open.)
		return nil
	}
	seq := vx.seq + 1
	keys := vx.sortedKeys()
	for _, k := range keys {
		s := vx.sets[k]
		if err := s.full.sync(); err != nil {
			return err
		}
		if s.graph != nil {
			if err := writeFileAtomic(vx.graphPath(k, seq), func(w io.Writer) error {
				_, err := s.graph.WriteTo(w)
				return err
			}); err != nil {
				return err
			}
		}
		if err := vx.appendCodes(s); err != nil {
			// The codes stay in memory; the next start quantises them.
			vx.dropCodesFile(s, err)
		}
	}
	b := append([]byte(nil), stateMagic...)
	b = binary.AppendUvarint(b, seq)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		s := vx.sets[k]
		b = binary.AppendUvarint(b, b2u(k.metadata))
		b = binary.AppendUvarint(b, uint64(k.dim))
		b = binary.AppendUvarint(b, uint64(s.full.n.Load()))
		b = binary.AppendUvarint(b, b2u(s.graph != nil))
	}
	b = binary.AppendUvarint(b, uint64(len(vx.docs)))
	for id, dv := range vx.docs {
		b = binary.AppendVarint(b, id)
		b = appendDocVecs(b, dv)
	}
	sum := crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
	b = binary.LittleEndian.AppendUint32(b, sum)
	// The codes files name the new STATE before it exists: a crash
	// before its rename leaves the old STATE, which they no longer
	// name (their codes are quantised again, never taken for another
	// checkpoint's).
	for _, k := range keys {
		if s := vx.sets[k]; s.cf != nil {
			if err := vx.vouchCodes(s, seq, sum); err != nil {
				vx.dropCodesFile(s, err)
			}
		}
	}
	err := writeFileAtomic(filepath.Join(vx.dir, stateFile), func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	syncDir(vx.dir)
	for _, k := range keys {
		if vx.sets[k].graph != nil {
			_ = os.Remove(vx.graphPath(k, vx.seq))
		}
	}
	// The new checkpoint holds everything the log recorded: a new log
	// starts (a crash before it exists replays nothing, and loses
	// nothing).
	_ = vx.log.close()
	_ = os.Remove(vx.logPath(vx.seq))
	vx.seq, vx.appended = seq, 0
	vx.stateRead, vx.stateSum = true, sum
	if vx.log, err = openLog(vx.logPath(seq), 0); err != nil {
		vx.log = nil
		slog.Warn("bleveengine: no vector log until the next start", "error", err)
	}
	for _, s := range vx.sets {
		s.rebuilt = false
	}
	return nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (vx *vecIndex) sortedKeys() []setKey {
	keys := make([]setKey, 0, len(vx.sets))
	for k := range vx.sets {
		keys = append(keys, k)
	}
	return keys
}

// writeFileAtomic writes path through a synced temporary file renamed
// over it.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// close releases the vector files and the log.
func (vx *vecIndex) close() {
	_ = vx.log.close()
	vx.log = nil
	for _, s := range vx.sets {
		if s.full != nil {
			_ = s.full.close()
		}
		s.cf.close()
	}
}

// uint64 reads a little-endian uint64.
func (d *decoder) uint64() uint64 {
	b := d.bytes(8)
	if d.err != nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// appendDocVecs encodes a document's vector references (content, then
// metadata: dimensions, 0 for none, then first, count and stamp), as the
// checkpoint's state file and the log's bind records both store them.
func appendDocVecs(b []byte, dv *docVecs) []byte {
	for _, r := range []vecRef{dv.c, dv.m} {
		b = binary.AppendUvarint(b, uint64(r.dim))
		if r.dim == 0 {
			continue
		}
		b = binary.AppendUvarint(b, uint64(r.first))
		b = binary.AppendUvarint(b, uint64(r.n))
		b = binary.LittleEndian.AppendUint64(b, r.stamp)
	}
	return b
}

// decodeDocVecs reads what appendDocVecs wrote; errors stay in d.
func decodeDocVecs(d *decoder) *docVecs {
	dv := &docVecs{}
	for _, metadata := range []bool{false, true} {
		r := dv.ref(metadata)
		r.dim = int32(d.uvarint())
		if r.dim == 0 {
			continue
		}
		r.first, r.n = int32(d.uvarint()), int32(d.uvarint())
		r.stamp = d.uint64()
	}
	return dv
}
