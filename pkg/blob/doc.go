// Package blob defines the small interface behind which docrepo keeps the
// bytes of uploaded files, and the rules every implementation shares.
//
// A [Store] maps keys to immutable byte objects. Put streams an object in
// without holding it in memory and makes it visible atomically: readers see
// either the previous object under the key or the complete new one, never a
// partial write. Open returns an [Object] that is an io.Reader, io.ReaderAt
// and io.Seeker and knows its size, which is what HTTP Range downloads and PDF
// page counting need.
//
// Keys are chosen by the service, never by users, but every store still
// validates them with [ValidateKey] so that no key can escape the store (a
// directory on disk, a bucket in S3). Errors carry the operation and the key
// in an [*Error]; test them with errors.Is against [ErrNotFound] and
// [ErrInvalidKey].
//
// Implementations live in sub-packages: diskstore (a local directory) and
// s3store (MinIO or any S3-compatible service). Package blobtest holds the
// conformance suite both pass.
package blob
