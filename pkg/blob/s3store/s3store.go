package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/docrepo/docrepo/pkg/blob"
	"github.com/docrepo/docrepo/pkg/blob/internal/ctxio"
)

const (
	// DefaultPartSize is the multipart part size when Config.PartSize is 0.
	DefaultPartSize = 16 << 20

	// MinPartSize is the smallest part size S3 accepts (except for the last
	// part).
	MinPartSize = 5 << 20

	// DefaultRegion is used when Config.Region is empty.
	DefaultRegion = "us-east-1"

	// singlePutMax is the largest body sent as a single PUT instead of a
	// multipart upload (which costs three requests).
	singlePutMax = 1 << 20

	contentType = "application/octet-stream"
)

// Config locates and authenticates the bucket.
type Config struct {
	// Endpoint is host[:port], without a scheme, e.g. "minio:9000".
	Endpoint  string
	AccessKey string
	SecretKey string
	Bucket    string
	// Region defaults to DefaultRegion.
	Region string
	// UseTLS selects https.
	UseTLS bool
	// PartSize is the multipart part size, at least MinPartSize; 0 means
	// DefaultPartSize. Each in-flight Put of a large object holds one part in
	// memory.
	PartSize uint64
}

// Store keeps objects in one S3 bucket. It is safe for concurrent use.
type Store struct {
	client   *minio.Client
	bucket   string
	partSize uint64
}

var _ blob.Store = (*Store)(nil)

// New connects to the bucket described by cfg, creating it if it does not
// exist. ctx bounds only the calls New makes.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = DefaultPartSize
	}
	switch {
	case cfg.Endpoint == "":
		return nil, errors.New("s3store: empty endpoint")
	case strings.Contains(cfg.Endpoint, "://"):
		return nil, fmt.Errorf("s3store: endpoint %q must be host[:port] without a scheme; set UseTLS for https", cfg.Endpoint)
	case cfg.Bucket == "":
		return nil, errors.New("s3store: empty bucket name")
	case cfg.PartSize < MinPartSize:
		return nil, fmt.Errorf("s3store: part size %d is below the S3 minimum of %d", cfg.PartSize, MinPartSize)
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: cfg.UseTLS,
		Region: cfg.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("s3store: %w", err)
	}
	if err := ensureBucket(ctx, client, cfg.Bucket, cfg.Region); err != nil {
		return nil, fmt.Errorf("s3store: bucket %q at %s: %w", cfg.Bucket, cfg.Endpoint, err)
	}
	return &Store{client: client, bucket: cfg.Bucket, partSize: cfg.PartSize}, nil
}

// ensureBucket creates the bucket unless it exists. Several processes may
// race to create it; losing that race is fine.
func ensureBucket(ctx context.Context, client *minio.Client, bucket, region string) error {
	ok, err := client.BucketExists(ctx, bucket)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	err = client.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: region})
	if err != nil && minio.ToErrorResponse(err).Code != minio.BucketAlreadyOwnedByYou {
		return err
	}
	return nil
}

// Client returns the underlying minio-go client, for operations outside
// blob.Store (tests, administration).
func (s *Store) Client() *minio.Client { return s.client }

// Bucket returns the bucket's name.
func (s *Store) Bucket() string { return s.bucket }

// Put implements [blob.Store].
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (n int64, err error) {
	if err := blob.CheckPut(key, r); err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			err = &blob.Error{Op: "put", Key: key, Err: withCause(ctx, err)}
		}
	}()
	if ctx.Err() != nil {
		return 0, context.Cause(ctx)
	}
	r = ctxio.Reader(ctx, r)

	// Read up to singlePutMax bytes; a body that ends within them goes up
	// in one request. The buffer is not pooled: the HTTP transport may still
	// read a request body after PutObject has returned an error.
	var head bytes.Buffer
	if _, err := head.ReadFrom(io.LimitReader(r, singlePutMax)); err != nil {
		return 0, err
	}
	if head.Len() < singlePutMax {
		r, n = bytes.NewReader(head.Bytes()), int64(head.Len())
	} else {
		// Size unknown: minio-go streams the rest in parts of s.partSize,
		// holding one part at a time.
		r, n = io.MultiReader(&head, r), -1
	}
	info, err := s.client.PutObject(ctx, s.bucket, key, r, n, minio.PutObjectOptions{
		ContentType: contentType,
		PartSize:    s.partSize,
	})
	if err != nil {
		return 0, err
	}
	return info.Size, nil
}

// Open implements [blob.Store]. The object reads through ctx, which must
// stay live until the object is closed.
func (s *Store) Open(ctx context.Context, key string) (blob.Object, error) {
	if err := blob.CheckKey("open", key); err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, &blob.Error{Op: "open", Key: key, Err: mapErr(ctx, err)}
	}
	// GetObject is lazy; Stat makes the first request and learns the size.
	st, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, &blob.Error{Op: "open", Key: key, Err: mapErr(ctx, err)}
	}
	return &object{obj: obj, size: st.Size, synced: true}, nil
}

// Stat implements [blob.Store].
func (s *Store) Stat(ctx context.Context, key string) (blob.Info, error) {
	if err := blob.CheckKey("stat", key); err != nil {
		return blob.Info{}, err
	}
	st, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return blob.Info{}, &blob.Error{Op: "stat", Key: key, Err: mapErr(ctx, err)}
	}
	return blob.Info{Key: key, Size: st.Size, ModTime: st.LastModified}, nil
}

// Delete implements [blob.Store]. S3 already treats deleting a missing key
// as success.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.CheckKey("delete", key); err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return &blob.Error{Op: "delete", Key: key, Err: mapErr(ctx, err)}
	}
	return nil
}

// mapErr turns S3's "no such key" into blob.ErrNotFound, keeping the S3
// error's text.
func mapErr(ctx context.Context, err error) error {
	if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
		return fmt.Errorf("%w: %w", blob.ErrNotFound, err)
	}
	return withCause(ctx, err)
}

// withCause makes a failure caused by cancelling ctx match the context's
// error (context.Canceled, context.DeadlineExceeded or the cause) whatever
// layer noticed it first.
func withCause(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	if errors.Is(err, cause) {
		return err
	}
	return fmt.Errorf("%w: %w", cause, err)
}

// object adapts minio.Object to blob.Object. It tracks the offset itself so
// that seeking past the end behaves as for files (allowed; Read then
// returns io.EOF), where minio.Object would reject the Seek.
type object struct {
	obj  *minio.Object
	size int64
	pos  int64
	// synced reports whether obj's own offset equals pos.
	synced bool
}

func (o *object) Size() int64 { return o.size }

func (o *object) Read(p []byte) (int, error) {
	if o.pos >= o.size {
		return 0, io.EOF
	}
	if !o.synced {
		if _, err := o.obj.Seek(o.pos, io.SeekStart); err != nil {
			return 0, err
		}
		o.synced = true
	}
	n, err := o.obj.Read(p)
	o.pos += int64(n)
	return n, err
}

func (o *object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("s3store: ReadAt at a negative offset")
	}
	if off >= o.size {
		return 0, io.EOF
	}
	return o.obj.ReadAt(p, off)
}

func (o *object) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = o.pos + offset
	case io.SeekEnd:
		abs = o.size + offset
	default:
		return 0, fmt.Errorf("s3store: Seek with invalid whence %d", whence)
	}
	if abs < 0 {
		return 0, errors.New("s3store: Seek to a negative position")
	}
	if abs != o.pos {
		o.pos, o.synced = abs, false
	}
	return abs, nil
}

func (o *object) Close() error { return o.obj.Close() }
