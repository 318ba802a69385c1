// Package client is the Go client of docrepo's public REST API
// (docs/api.md): the one every tool, benchmark and test of the repository
// uses to call the gateway.
//
// A Client holds the gateway's base URL, an API key and an *http.Client:
//
//	c, err := client.New("http://127.0.0.1:8080", os.Getenv("DOCREPO_ADMIN_TOKEN"))
//	f, err := c.CreateFolder(ctx, "Invoices", 0)
//	file, _ := os.Open("scan.pdf")
//	res, err := c.Upload(ctx, client.Upload{FolderID: f.FolderID, File: file,
//		Filename: "scan.pdf", IdempotencyKey: "scan.pdf@2024-03-01",
//		Metadata: client.Metadata{DocType: "Invoice"}})
//	hits, err := c.Search(ctx, client.SearchRequest{Where: client.FTS("overdue")})
//
// Every method takes a context and maps to one endpoint; its doc comment
// names the section of docs/api.md it implements.
//
// # Uploads stream
//
// Upload and UploadVersion send the file as a multipart body written while
// it is sent (an io.Pipe): the file is never held in memory, whatever its
// size. The metadata fields go before the file part, so the gateway checks
// them before it stores a byte.
//
// # Errors
//
// A response outside 2xx (304 of a conditional download excepted) is an
// *Error carrying the status, the JSON `detail` and, for 429 and 503, the
// Retry-After delay:
//
//	var e *client.Error
//	if errors.As(err, &e) && e.Status == http.StatusNotFound { … }
//
// StatusOf(err) is the short form. Transport failures (connection refused,
// reset) are returned as they come from net/http, wrapped.
//
// # Retries
//
// A call is retried (by Options.Retry, DefaultRetry unless set) when it is
// safe to send again and the failure is transient:
//
//   - idempotent calls (GET, PATCH, PUT, search, lock and unlock) after a
//     transport error, 502, 503 or 429 (Retry.Statuses), waiting
//     Retry-After when the gateway sends it (at most Retry.MaxWait);
//   - an upload with an IdempotencyKey likewise: docs/api.md §10 makes the
//     repeat return the first upload's result, never a second document. Its
//     File must be an io.Seeker (an *os.File, a *bytes.Reader) to be sent
//     again; another reader is sent once;
//   - every other call (create, move and delete folder, an upload without
//     key, a new version) only when the connection was refused: then the
//     request never reached the gateway.
//
// 504 (a search past its time limit) is never retried: the same query
// would time out again.
//
// # Adding an endpoint
//
// A method builds a call (method, path, query, JSON body, whether it is
// idempotent) and hands it to callJSON (callSlice for a bare array) with
// the type to decode the answer into; errors, retries, authentication and
// the base URL are handled there. folders.go shows the shape; an area's
// types and methods go in a file of their own, and its wire behaviour is
// tested in client_test.go, its behaviour against a running stack in
// gateway/e2e/client_test.go.
package client
