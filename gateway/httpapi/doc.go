// Package httpapi is docrepo's REST edge: a grpc-gateway mux that serves the
// public API of docs/api.md §4 and docs/design.md §4 by forwarding to the document, folder,
// search and schema services, each over its own gRPC connection.
//
// JSON follows docs/design.md §2 (see Marshaler); every error is {"detail": ...}
// (see errorHandler). The multipart upload, the new-version upload and the
// download are hand-written routes that stream to and from gRPC streams in
// fixed-size chunks, so memory stays flat whatever the file size.
//
// The gateway does not authenticate: it forwards the Authorization header
// and each service authenticates and checks scopes itself, exactly as for a
// direct gRPC caller.
package httpapi
