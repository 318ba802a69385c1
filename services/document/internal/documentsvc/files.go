package documentsvc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/extract"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

// storedFile is a file whose bytes are in the blob store.
type storedFile struct {
	key       string
	imageName string
	origname  string
	mimeType  string
	size      int64
	sha256    string
	pageCount *int32
}

// errTooLarge is the 413 of docs/design.md §4 (the spec names no size limit).
func errTooLarge() error { return apierr.TooLarge("File too large") }

// chunkSource yields the file's chunks in order and io.EOF after the last.
type chunkSource func() ([]byte, error)

// fileReader turns a chunk stream into an io.Reader for blob.Store.Put,
// hashing and counting the bytes on the way and keeping the first bytes for
// content sniffing. It holds at most one chunk.
type fileReader struct {
	next chunkSource
	max  int64 // 0: no limit
	buf  []byte
	hash hash.Hash
	n    int64
	head []byte
	// err is the first failure other than the end of the stream: it
	// explains a failed Put better than the store's wrapping does.
	err error
}

func newFileReader(next chunkSource, max int64) *fileReader {
	return &fileReader{next: next, max: max, hash: sha256.New(), head: make([]byte, 0, sniffLen)}
}

func (r *fileReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		chunk, err := r.next()
		if errors.Is(err, io.EOF) {
			return 0, io.EOF
		}
		if err != nil {
			r.err = err
			return 0, err
		}
		if r.max > 0 && r.n+int64(len(chunk)) > r.max {
			r.err = errTooLarge()
			return 0, r.err
		}
		r.n += int64(len(chunk))
		r.buf = chunk
		r.hash.Write(chunk)
		if room := sniffLen - len(r.head); room > 0 {
			r.head = append(r.head, chunk[:min(room, len(chunk))]...)
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// receiveFile streams a file into the blob store under a fresh key. On any
// failure nothing is left in the store.
func (s *Service) receiveFile(ctx context.Context, hdr *documentv1.FileHeader, next chunkSource) (*storedFile, error) {
	origname, err := cleanFilename(hdr.GetFilename())
	if err != nil {
		return nil, err
	}
	if s.maxSize > 0 && hdr.GetDeclaredSize() > s.maxSize {
		return nil, errTooLarge()
	}
	imageName, key := newStorageName(origname)
	// Record the key first, so that a crash between here and the commit
	// leaves a trace the sweeper follows (SweepPending), and renew it for
	// as long as the request runs, so that the sweeper never takes a slow
	// upload, or one waiting for its commit, for a dead one.
	if _, err := s.pool.Exec(ctx, `INSERT INTO document_pending_blobs (blob_key) VALUES ($1)`, key); err != nil {
		return nil, internal(err)
	}
	go s.keepPending(ctx, key)
	r := newFileReader(next, s.maxSize)
	n, err := s.store.Put(ctx, key, r)
	if err != nil {
		// Put leaves nothing partial, but a failure at its very end may
		// leave the whole object: the key is ours alone, so delete it.
		s.discard(key)
		if r.err != nil {
			return nil, internal(r.err)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, apierr.Internal(err)
	}
	if n != r.n {
		s.discard(key)
		return nil, apierr.Internal(errors.New("blob store stored a different number of bytes than were received"))
	}
	f := &storedFile{
		key:       key,
		imageName: imageName,
		origname:  origname,
		mimeType:  DetectType(hdr.GetContentType(), origname, r.head),
		size:      n,
		sha256:    hex.EncodeToString(r.hash.Sum(nil)),
	}
	if f.mimeType == "application/pdf" || bytes.HasPrefix(r.head, []byte("%PDF-")) {
		f.pageCount = s.pageCount(ctx, key, n)
	}
	return f, nil
}

// keepPending renews the pending record of key every pendingTouch until
// ctx (the upload's request) ends: its created_at is the upload's last sign
// of life, which the sweeper measures the age from.
func (s *Service) keepPending(ctx context.Context, key string) {
	t := time.NewTicker(s.pendingTouch)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.pool.Exec(ctx, `UPDATE document_pending_blobs SET created_at = now() WHERE blob_key = $1`, key); err != nil && ctx.Err() == nil {
			s.log.Warn("could not renew the pending record of an upload in progress", "key", key, "error", err)
		}
	}
}

// discard deletes a blob that no committed row refers to, then its pending
// record. It runs even when the request's context is gone. The record
// decides: a blob without one belongs to a committed file (a COMMIT can
// fail after it took effect), so it is kept. The record is read FOR
// UPDATE: a transaction that committed the file row deleted it, and one
// whose COMMIT is still in flight (the client gave up on it, the server
// has not finished it) holds its lock, so discard waits for that COMMIT's
// outcome instead of deleting the bytes of a row about to be visible.
// When the blob cannot be deleted, the record stays and the sweeper tries
// again later.
func (s *Service) discard(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var pending bool
		err := tx.QueryRow(ctx, `SELECT true FROM document_pending_blobs WHERE blob_key = $1 FOR UPDATE`, key).Scan(&pending)
		if errors.Is(err, pgx.ErrNoRows) {
			s.log.Warn("not deleting a blob whose file row committed", "key", key)
			return nil
		}
		if err != nil {
			return fmt.Errorf("check the pending record: %w", err)
		}
		if err := s.store.Delete(ctx, key); err != nil {
			return fmt.Errorf("delete the blob: %w", err)
		}
		_, err = tx.Exec(ctx, forgetPendingSQL, key)
		return err
	})
	if err != nil {
		s.log.Error("could not delete an unreferenced blob; the sweeper will retry", "key", key, "error", err)
	}
}

// committed removes the pending record of a blob inside the transaction
// that commits its file row. See checkCommitted.
func committed(ctx context.Context, tx pgx.Tx, key string) error {
	tag, err := tx.Exec(ctx, forgetPendingSQL, key)
	if err != nil {
		return err
	}
	return checkCommitted(key)(tag)
}

// checkCommitted fails a file row's transaction when its blob's pending
// record is gone: discard or the sweeper took it first and deleted the
// bytes (they lock the record, so exactly one side wins), and a row
// committed now would point at nothing.
func checkCommitted(key string) func(pgconn.CommandTag) error {
	return func(tag pgconn.CommandTag) error {
		if tag.RowsAffected() != 1 {
			return apierr.Internal(fmt.Errorf("the pending record of blob %s is gone: its bytes were discarded before the file row committed", key))
		}
		return nil
	}
}

// forgetPendingSQL drops the pending record of blob key $1: its file row
// committed, or the blob itself is gone.
const forgetPendingSQL = `DELETE FROM document_pending_blobs WHERE blob_key = $1`

// SweepPending deletes the blobs of uploads that never committed: pending
// records not renewed for olderThan (uploads in progress renew theirs every
// Deps.PendingTouch, so theirs are dead). It
// returns how many it removed. Several service instances may sweep at
// once: each record is claimed with SKIP LOCKED.
func (s *Service) SweepPending(ctx context.Context, olderThan time.Duration) (int, error) {
	removed := 0
	for {
		n := 0
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT blob_key FROM document_pending_blobs
				WHERE created_at < now() - make_interval(secs => $1)
				ORDER BY created_at LIMIT 100 FOR UPDATE SKIP LOCKED`, olderThan.Seconds())
			if err != nil {
				return err
			}
			keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			for _, key := range keys {
				if err := s.store.Delete(ctx, key); err != nil {
					return fmt.Errorf("delete blob %s: %w", key, err)
				}
				if _, err := tx.Exec(ctx, forgetPendingSQL, key); err != nil {
					return err
				}
				s.log.InfoContext(ctx, "deleted the blob of an upload that never committed", "key", key)
				n++
			}
			return nil
		})
		removed += n
		if err != nil || n < 100 {
			return removed, err
		}
	}
}

// pageCount counts the pages of the PDF stored under key, or returns nil when
// that is not possible (not really a PDF, damaged, too large, too slow): an
// upload never fails for the sake of its page count. At most
// Deps.PageCountConcurrency counts run at once; the others wait their turn
// within the same time limit.
func (s *Service) pageCount(ctx context.Context, key string, size int64) *int32 {
	if s.pageCountMax > 0 && size > s.pageCountMax {
		s.log.InfoContext(ctx, "PDF too large for page counting", "key", key, "size", size)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.pageCountTimeout)
	defer cancel()
	select {
	case s.pageCounts <- struct{}{}:
		defer func() { <-s.pageCounts }()
	case <-ctx.Done():
		s.log.WarnContext(ctx, "no turn for page counting in time", "key", key, "error", ctx.Err())
		return nil
	}
	obj, err := s.store.Open(ctx, key)
	if err != nil {
		s.log.WarnContext(ctx, "open PDF for page counting", "key", key, "error", err)
		return nil
	}
	defer obj.Close()
	n, err := extract.PageCountContext(ctx, newBlockCache(obj, 64<<10, 64), size, extract.Options{MaxPDFBytes: s.pageCountMax})
	if err != nil || n <= 0 || n > 1<<31-1 {
		s.log.InfoContext(ctx, "no page count for PDF", "key", key, "error", err)
		return nil
	}
	pc := int32(n)
	return &pc
}

// blockCache is an io.ReaderAt that reads its source in aligned blocks and
// keeps the most recently used ones, so that a PDF parser's many small reads
// become few large ones (each ReadAt of an S3 object is an HTTP request).
// Memory is bounded by blockSize*maxBlocks.
type blockCache struct {
	src       io.ReaderAt
	blockSize int64
	maxBlocks int
	blocks    map[int64][]byte
	order     []int64 // least recently used first
}

func newBlockCache(src io.ReaderAt, blockSize int64, maxBlocks int) *blockCache {
	return &blockCache{src: src, blockSize: blockSize, maxBlocks: maxBlocks, blocks: map[int64][]byte{}}
}

func (c *blockCache) block(i int64) ([]byte, error) {
	if b, ok := c.blocks[i]; ok {
		c.touch(i)
		return b, nil
	}
	b := make([]byte, c.blockSize)
	n, err := c.src.ReadAt(b, i*c.blockSize)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	b = b[:n]
	if len(c.order) >= c.maxBlocks {
		delete(c.blocks, c.order[0])
		c.order = c.order[1:]
	}
	c.blocks[i] = b
	c.order = append(c.order, i)
	return b, nil
}

func (c *blockCache) touch(i int64) {
	for k, v := range c.order {
		if v == i {
			c.order = append(append(c.order[:k:k], c.order[k+1:]...), i)
			return
		}
	}
}

// ReadAt implements io.ReaderAt.
func (c *blockCache) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("blockcache: negative offset")
	}
	done := 0
	for done < len(p) {
		pos := off + int64(done)
		b, err := c.block(pos / c.blockSize)
		if err != nil {
			return done, err
		}
		within := pos % c.blockSize
		if within >= int64(len(b)) {
			return done, io.EOF
		}
		done += copy(p[done:], b[within:])
	}
	return done, nil
}

// fileDetails describes a stored file in an audit entry.
func fileDetails(f *storedFile) map[string]any {
	return map[string]any{"name": f.origname, "image_name": f.imageName, "mime_type": f.mimeType, "size": f.size, "sha256": f.sha256}
}
