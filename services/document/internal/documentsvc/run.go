package documentsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/docrepo/docrepo/pkg/blob"
	"github.com/docrepo/docrepo/pkg/blob/diskstore"
	"github.com/docrepo/docrepo/pkg/blob/s3store"
	"github.com/docrepo/docrepo/pkg/bootstrap"
	"github.com/docrepo/docrepo/pkg/config"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	schemav1 "github.com/docrepo/docrepo/pkg/gen/docrepo/schema/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/outbox"
)

// Config is the document service's configuration.
type Config struct {
	config.Common
	// FolderAddr and SchemaAddr are the gRPC addresses of the folder and
	// schema services.
	FolderAddr string
	SchemaAddr string
	// BlobDir is the local blob directory, used unless MinIO.Endpoint is set.
	BlobDir string
	MinIO   MinIOConfig
	// MaxUploadBytes is the largest accepted file (413 above).
	MaxUploadBytes int64
	// PageCountMaxBytes is the largest PDF whose pages are counted.
	PageCountMaxBytes int64
	// PageCountConcurrency bounds page counts at once (0: the CPUs).
	PageCountConcurrency int
	// OrphanAge is how old the pending record of an upload that never
	// committed must be before its blob is deleted (0: never sweep).
	OrphanAge time.Duration

	// Listener, when set, replaces listening on GRPCAddr (tests).
	Listener net.Listener
	// Logger, when set, replaces the configured logger (tests).
	Logger *slog.Logger
}

// MinIOConfig locates the S3 bucket (MinIO or any S3-compatible service).
type MinIOConfig struct {
	Endpoint  string
	AccessKey string
	SecretKey string
	Bucket    string
	UseSSL    bool
}

// DefaultMaxUploadBytes is the default upload limit (10 GiB), the same as
// the gateway's.
const DefaultMaxUploadBytes = 10 << 30

// Register adds the service's settings to l.
func (c *Config) Register(l *config.Loader) {
	l.RegisterCommon(&c.Common, "127.0.0.1:9101", "127.0.0.1:9111")
	l.String(&c.FolderAddr, "folder-addr", "DOCREPO_FOLDER_ADDR", "127.0.0.1:9102", "folder service gRPC address")
	l.String(&c.SchemaAddr, "schema-addr", "DOCREPO_SCHEMA_ADDR", "127.0.0.1:9104", "schema service gRPC address")
	l.String(&c.BlobDir, "blob-dir", "DOCREPO_BLOB_DIR", "./.data/blobs", "directory of the local blob store (used unless MINIO_ENDPOINT is set)")
	l.String(&c.MinIO.Endpoint, "minio-endpoint", "MINIO_ENDPOINT", "", "MinIO/S3 host:port; empty: blobs on local disk")
	l.String(&c.MinIO.AccessKey, "minio-access-key", "MINIO_ACCESS_KEY", "", "MinIO/S3 access key")
	l.String(&c.MinIO.SecretKey, "minio-secret-key", "MINIO_SECRET_KEY", "", "MinIO/S3 secret key")
	l.String(&c.MinIO.Bucket, "minio-bucket", "MINIO_BUCKET", "docrepo", "MinIO/S3 bucket (created when missing)")
	l.Bool(&c.MinIO.UseSSL, "minio-use-ssl", "MINIO_USE_SSL", false, "use https for MinIO/S3")
	l.Int64(&c.MaxUploadBytes, "max-upload-bytes", "DOCREPO_MAX_UPLOAD_BYTES", DefaultMaxUploadBytes, "largest accepted upload in bytes (413 above)")
	l.Int64(&c.PageCountMaxBytes, "pagecount-max-bytes", "DOCREPO_PAGECOUNT_MAX_BYTES", DefaultPageCountMaxBytes, "largest PDF whose pages are counted at upload")
	l.Int(&c.PageCountConcurrency, "pagecount-concurrency", "DOCREPO_PAGECOUNT_CONCURRENCY", 0, "PDFs counted at once at upload (0: the number of CPUs)")
	l.Duration(&c.OrphanAge, "orphan-age", "DOCREPO_ORPHAN_BLOB_AGE", 24*time.Hour, "age after which the blob of an upload that never committed is deleted (0: never)")
}

// OpenStore opens the configured blob store: S3 when an endpoint is set,
// else the local directory.
func OpenStore(ctx context.Context, cfg Config) (blob.Store, error) {
	if cfg.MinIO.Endpoint != "" {
		st, err := s3store.New(ctx, s3store.Config{
			Endpoint:  cfg.MinIO.Endpoint,
			AccessKey: cfg.MinIO.AccessKey,
			SecretKey: cfg.MinIO.SecretKey,
			Bucket:    cfg.MinIO.Bucket,
			UseTLS:    cfg.MinIO.UseSSL,
		})
		if err != nil {
			return nil, fmt.Errorf("document: blob store: %w", err)
		}
		return st, nil
	}
	if cfg.BlobDir == "" {
		return nil, errors.New("document: no blob store: set DOCREPO_BLOB_DIR or MINIO_ENDPOINT")
	}
	st, err := diskstore.New(cfg.BlobDir)
	if err != nil {
		return nil, fmt.Errorf("document: blob store: %w", err)
	}
	return st, nil
}

// Run runs the document service until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	svc, err := bootstrap.Start(ctx, "document", cfg.Common, bootstrap.Options{Schema: Schema, Migrations: Migrations(), Logger: cfg.Logger})
	if err != nil {
		return err
	}
	defer svc.Close()
	store, err := OpenStore(ctx, cfg)
	if err != nil {
		return err
	}
	if c, ok := store.(interface{ Close() error }); ok {
		defer c.Close()
	}
	folderConn, err := grpcclient.Dial(cfg.FolderAddr)
	if err != nil {
		return err
	}
	defer folderConn.Close()
	schemaConn, err := grpcclient.Dial(cfg.SchemaAddr)
	if err != nil {
		return err
	}
	defer schemaConn.Close()
	svc.Listener = cfg.Listener
	service := NewService(Deps{
		Pool:                 svc.Pool,
		Store:                store,
		Folders:              folderv1.NewFolderServiceClient(folderConn),
		Schema:               schemav1.NewSchemaServiceClient(schemaConn),
		MaxUploadBytes:       cfg.MaxUploadBytes,
		PageCountMaxBytes:    cfg.PageCountMaxBytes,
		PageCountConcurrency: cfg.PageCountConcurrency,
		Logger:               svc.Logger,
	})
	documentv1.RegisterDocumentServiceServer(svc.Server.GRPC(), service)
	if cfg.OrphanAge > 0 {
		svc.Go(func(ctx context.Context) error { return sweepLoop(ctx, service, cfg.OrphanAge, svc.Logger) })
	}
	if cfg.NATSURL != "" {
		js, err := svc.JetStream()
		if err != nil {
			return err
		}
		svc.Go(func(ctx context.Context) error {
			return outbox.RunRelay(ctx, svc.Pool, js, svc.Logger, outbox.Options{Name: "document"}, outbox.WithReplicas(cfg.NATSReplicas))
		})
		svc.Go(func(ctx context.Context) error {
			return service.ConsumeFolderEvents(ctx, js, outbox.WithReplicas(cfg.NATSReplicas))
		})
	} else {
		svc.Logger.Warn("NATS_URL is empty: outbox events are stored but not published, and folder deletions are not heard")
	}
	svc.Ready = func(ctx context.Context) error {
		_, err := store.Stat(ctx, "readyz-probe")
		if err != nil && !blob.IsNotFound(err) {
			return fmt.Errorf("blob store: %w", err)
		}
		return nil
	}
	return svc.Run(ctx)
}

// sweepInterval is how often the service looks for orphaned blobs.
const sweepInterval = 10 * time.Minute

// sweepLoop deletes the blobs of uploads that died before committing, at
// start and then every sweepInterval.
func sweepLoop(ctx context.Context, s *Service, age time.Duration, log *slog.Logger) error {
	for {
		if n, err := s.SweepPending(ctx, age); err != nil && ctx.Err() == nil {
			log.Warn("sweeping orphaned blobs failed; will retry", "error", err, "removed", n)
		} else if n > 0 {
			log.Info("swept orphaned blobs", "removed", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(sweepInterval):
		}
	}
}
