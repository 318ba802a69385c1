// Package s3store is a [blob.Store] on an S3 bucket (MinIO in docrepo's
// deployments), using minio-go.
//
// Put streams: a body shorter than 1 MiB goes up in one PUT; anything larger
// becomes a multipart upload of [Config.PartSize] parts (16 MiB by default),
// so one Put holds about one part in memory whatever the object's size, and
// the largest object is 10,000 parts (156 GiB at 16 MiB). S3 publishes an
// object only when its upload completes, and minio-go aborts the multipart
// upload when Put fails or is cancelled, so no partial object ever becomes
// visible.
//
// Open returns minio-go's Object, which reads lazily: Read streams one GET,
// and each ReadAt, or Read after a Seek, issues a new ranged GET. Callers
// doing many small ReadAt calls (PDF parsers) should wrap the object in a
// buffer or copy it to a temporary file first. Reads are pinned to the ETag
// seen by Open, so an object overwritten while open fails with an error
// rather than mixing two versions.
package s3store
