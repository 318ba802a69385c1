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
	"strconv"

	"github.com/docrepo/docrepo/pkg/search/ann"
)

// The vector index's log (vectors/log.<seq>): what changed after
// checkpoint seq, so that a start after a crash replays it instead of
// adding every vector written since the checkpoint to the graph again
// (11 min 52 s at 12,048 blended documents before the log). Records, in
// the order the writer made the changes:
//
//   - set: a set created (target, dimension, whether it has a graph and,
//     since M and efConstruction became settings of their own, the
//     graph's M and efConstruction: a record without them is of a graph
//     built with legacyGraphConfig, ann's defaults then; since graphs
//     have shards, the shard size, 0 for none: a record without it is of
//     a graph of one shard);
//   - vec: a vector appended to a set (its number) and, with a graph, the
//     record of its Add (ann.Graph.AddLogged: its links and the lists of
//     the neighbours it changed), so replaying it computes no distance;
//   - bind: a document's vectors after a write (the refs and stamps
//     docVecs holds; none for a deleted document).
//
// Each record is framed as its length (uint32), the record, and a CRC-32
// (Castagnoli) of the record. Replay stops at the first frame that is
// short or fails its check (a torn tail: the process died while writing
// it), so the state replayed is always the state after some prefix of
// the writer's changes, never a half-applied one.
//
// Durability follows the vector index's model: the bleve index is the
// truth and the vector index is derived from it (an Upsert returns once
// its bleve batch is durable; the vectors are not synced per write). The
// log is written with one write(2) per batch and not synced either: a
// killed process (kill -9, OOM) loses nothing the kernel had, and a power
// loss loses what it had not written back. So the vectors a log record
// names are checked at open: a document the log binds keeps its vectors
// only when the vector files still hold exactly them (their stamp);
// otherwise, and for everything after the last record replayed, open adds
// the vectors again from the bleve index, as it did for everything after
// the checkpoint before the log existed. A checkpoint starts a new log.

const (
	logSet  = 1
	logVec  = 2
	logBind = 3
	// maxLogRecord bounds a frame's length (a graph record is a few KB).
	maxLogRecord = 1 << 24
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// vecLog appends records to a log file. Only the vector index's writer
// uses it (under vecMu). A failed write stops the log (it is an
// accelerator: the next start adds those vectors again) until the next
// checkpoint starts a new one.
type vecLog struct {
	f   *os.File
	w   *bufio.Writer
	buf []byte // the record being built
	err error
}

func (vx *vecIndex) logPath(seq uint64) string {
	return filepath.Join(vx.dir, "log."+strconv.FormatUint(seq, 10))
}

// openLog opens the log of checkpoint seq for appending after its first
// size bytes (the records replayed; a torn tail is cut).
func openLog(path string, size int64) (*vecLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(size, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return &vecLog{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// begin starts a record of kind.
func (l *vecLog) begin(kind byte) []byte {
	return append(l.buf[:0], kind)
}

// end frames record b and buffers it.
func (l *vecLog) end(b []byte) {
	l.buf = b
	if l.err != nil {
		return
	}
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(b)))
	l.w.Write(hdr[:])
	l.w.Write(b)
	_, err := l.w.Write(binary.LittleEndian.AppendUint32(hdr[:0], crc32.Checksum(b, castagnoli)))
	l.fail(err)
}

// flush hands the buffered records to the kernel (one write per batch).
func (l *vecLog) flush() {
	if l != nil && l.err == nil {
		l.fail(l.w.Flush())
	}
}

func (l *vecLog) fail(err error) {
	if err != nil && l.err == nil {
		l.err = err
		slog.Warn("bleveengine: the vector log stopped; a crash before the next checkpoint adds the vectors written since again", "error", err)
	}
}

func (l *vecLog) close() error {
	if l == nil {
		return nil
	}
	l.flush()
	return errors.Join(l.err, l.f.Close())
}

// legacyGraphConfig is the build settings of a graph whose set record
// names none (written before records named them): the log's Add records
// are of a graph with those link lists, so it is replayed into one.
var legacyGraphConfig = ann.Config{M: 16, EfConstruction: 100, Shard: ann.Unsharded}

// logSet records a new set and its graph's build settings (g nil: none).
func (vx *vecIndex) logSet(k setKey, g *ann.Graph) {
	if vx.log == nil {
		return
	}
	b := vx.log.begin(logSet)
	b = binary.AppendUvarint(b, b2u(k.metadata))
	b = binary.AppendUvarint(b, uint64(k.dim))
	b = binary.AppendUvarint(b, b2u(g != nil))
	if g != nil {
		cfg := g.Config()
		b = binary.AppendUvarint(b, uint64(cfg.M))
		b = binary.AppendUvarint(b, uint64(cfg.EfConstruction))
		b = binary.AppendUvarint(b, uint64(max(0, cfg.Shard))) // 0: unsharded
	}
	vx.log.end(b)
}

// decodeSet decodes a set record (after its kind): the set, whether it
// has a graph and the graph's build settings (legacyGraphConfig for a
// record that names none).
func decodeSet(b []byte) (setKey, *ann.Config, error) {
	d := decoder{b: b}
	k := setKey{metadata: d.uvarint() == 1, dim: int(d.uvarint())}
	graph := d.uvarint() == 1
	var cfg *ann.Config
	if graph {
		c := legacyGraphConfig
		if d.err == nil && len(d.b) != 0 {
			c.M, c.EfConstruction = int(d.uvarint()), int(d.uvarint())
			if c.M <= 0 || c.M > 256 || c.EfConstruction <= 0 || c.EfConstruction > 1<<16 {
				d.err = errCorrupt
			}
			// Records before shards end here: their graphs have none.
			if d.err == nil && len(d.b) != 0 {
				if c.Shard = int(d.uvarint()); c.Shard == 0 {
					c.Shard = ann.Unsharded
				} else if c.Shard > 1<<30 {
					d.err = errCorrupt
				}
			}
		}
		cfg = &c
	}
	if d.err != nil || len(d.b) != 0 || k.dim <= 0 || k.dim > 1<<16 {
		return setKey{}, nil, fmt.Errorf("set record: %w", errCorrupt)
	}
	return k, cfg, nil
}

// bindRecord records document id's vectors after a write (dv nil: none).
func (vx *vecIndex) logBind(id int64, dv *docVecs) {
	if vx.log == nil {
		return
	}
	b := vx.log.begin(logBind)
	b = binary.AppendVarint(b, id)
	if dv == nil {
		dv = &docVecs{}
	}
	vx.log.end(appendDocVecs(b, dv))
}

// appendVector appends v to set s: to its file, its codes and its graph,
// logging the graph's change.
func (vx *vecIndex) appendVector(s *vecSet, v []float32) (int32, error) {
	id, err := s.full.append(v)
	if err != nil {
		return 0, err
	}
	s.codes.Append(v)
	if vx.log == nil || vx.log.err != nil {
		if s.graph != nil {
			s.graph.Add(v)
		}
		return id, nil
	}
	b := vx.log.begin(logVec)
	b = binary.AppendUvarint(b, b2u(s.key.metadata))
	b = binary.AppendUvarint(b, uint64(s.key.dim))
	b = binary.AppendUvarint(b, uint64(id))
	if s.graph != nil {
		_, b = s.graph.AddLogged(v, b)
	}
	vx.log.end(b)
	return id, nil
}

// replayLog applies the log of the checkpoint read (readState) and
// returns the length of its valid prefix. Sets' stores are extended over
// the vectors the log appended (each must be in the file); documents the
// log binds are listed in fromLog (checked by checkLogged).
func (vx *vecIndex) replayLog() (int64, error) {
	f, err := os.Open(vx.logPath(vx.seq))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var valid int64
	var rec []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return valid, nil
		}
		n := binary.LittleEndian.Uint32(hdr[:])
		if n == 0 || n > maxLogRecord {
			return valid, nil
		}
		if cap(rec) < int(n)+4 {
			rec = make([]byte, n+4)
		}
		rec = rec[:n+4]
		if _, err := io.ReadFull(r, rec); err != nil {
			return valid, nil
		}
		body := rec[:n]
		if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(rec[n:]) {
			return valid, nil
		}
		if err := vx.replayRecord(body); err != nil {
			// A record that checks but does not fit (the vector file
			// lost what it names): the state so far is whole; what
			// follows is added again from the bleve index.
			slog.Warn("bleveengine: the vector log's replay stopped", "at", valid, "error", err)
			return valid, nil
		}
		valid += 4 + int64(n) + 4
	}
}

// newSet opens a set the log created, with a graph built with cfg (nil:
// none).
func (vx *vecIndex) newSet(k setKey, cfg *ann.Config) (*vecSet, error) {
	full, err := openFileStore(vx.storePath(k), k.dim, 0)
	if err != nil {
		return nil, err
	}
	s := &vecSet{key: k, full: full, codes: ann.NewCodesLayout(k.dim, vx.layout)}
	if cfg != nil {
		s.graph = ann.New(k.dim, full.vector, ann.Config{M: cfg.M, EfConstruction: cfg.EfConstruction, Shard: cfg.Shard, Seed: uint64(k.dim)})
	}
	return s, nil
}

// replayRecord applies one record, or nothing when it does not fit.
func (vx *vecIndex) replayRecord(b []byte) error {
	d := decoder{b: b[1:]}
	switch b[0] {
	case logSet:
		k, cfg, err := decodeSet(d.b)
		if err != nil {
			return err
		}
		if vx.sets[k] != nil {
			return nil
		}
		s, err := vx.newSet(k, cfg)
		if err != nil {
			return err
		}
		vx.sets[k] = s
	case logVec:
		k := setKey{metadata: d.uvarint() == 1, dim: int(d.uvarint())}
		id := int64(d.uvarint())
		s := vx.sets[k]
		if d.err != nil || s == nil || id != s.full.n.Load() {
			return fmt.Errorf("vector record: %w", errCorrupt)
		}
		if s.graph == nil && len(d.b) != 0 {
			return fmt.Errorf("vector record with a graph change for a set without one: %w", errCorrupt)
		}
		// The vector first (its file must hold it), then its node.
		if err := s.full.extend(id + 1); err != nil {
			return err
		}
		if s.graph != nil && !s.rebuilt {
			if err := s.graph.Replay(d.b); err != nil {
				s.full.n.Store(id)
				return err
			}
		}
		if s.rebuilt {
			// The checkpoint's graph was built again: the log's links
			// are of another graph.
			s.graph.Add(s.full.vector(int32(id)))
		}
		vx.appended++
		vx.replayed++
	case logBind:
		id := d.varint()
		dv := decodeDocVecs(&d)
		if d.err != nil || len(d.b) != 0 {
			return fmt.Errorf("bind record: %w", errCorrupt)
		}
		// The vectors the document lost are erased again: the erasure
		// may not have reached the disk when the record did.
		if old := vx.docs[id]; old != nil {
			for _, metadata := range []bool{false, true} {
				oref, nref := *old.ref(metadata), *dv.ref(metadata)
				if oref.n > 0 && oref != nref {
					vx.eraseReplayed(setKey{metadata, int(oref.dim)}, oref)
				}
			}
		}
		if dv.c.n == 0 && dv.m.n == 0 {
			delete(vx.docs, id)
		} else {
			vx.docs[id] = dv
		}
		if vx.fromLog == nil {
			vx.fromLog = map[int64]bool{}
		}
		vx.fromLog[id] = true
	default:
		return fmt.Errorf("record kind %d: %w", b[0], errCorrupt)
	}
	return nil
}

// eraseReplayed overwrites r's vectors with zeros in set key's file (the
// codes are quantised from the files after the replay); syncErased
// makes it durable.
func (vx *vecIndex) eraseReplayed(key setKey, r vecRef) {
	s := vx.sets[key]
	if s == nil || r.first < 0 || r.n <= 0 || int64(r.first)+int64(r.n) > s.full.n.Load() {
		return
	}
	if err := s.full.clear(r.first, r.n); err != nil && vx.eraseErr == nil {
		vx.eraseErr = err
	}
	if vx.erased == nil {
		vx.erased = map[setKey]bool{}
	}
	vx.erased[key] = true
	vx.erasedVectors += int64(r.n)
}

// checkLogged drops the documents the log bound whose vectors the files
// do not hold exactly (lost by a power loss, or erased after the record
// was written): open adds them again from the bleve index.
func (vx *vecIndex) checkLogged() {
	for id := range vx.fromLog {
		dv := vx.docs[id]
		if dv == nil {
			continue
		}
		for _, metadata := range []bool{false, true} {
			r := *dv.ref(metadata)
			if r.n == 0 {
				continue
			}
			s := vx.sets[setKey{metadata, int(r.dim)}]
			if s == nil || r.first < 0 || r.n < 0 || int64(r.first)+int64(r.n) > s.full.n.Load() || stampOf(s.vectorsOf(r)) != r.stamp {
				delete(vx.docs, id)
				vx.dropped++
				break
			}
		}
	}
	vx.fromLog = nil
}
