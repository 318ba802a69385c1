package e2e

import (
	"context"
	"os"
	"sync"

	"github.com/docrepo/docrepo/services/document/documentsvc"
)

// docMaxUpload is the upload limit of the stack's document service; the
// gateway's (stack_test.go) is the same.
const docMaxUpload = 64 << 20

var (
	blobDirOnce sync.Once
	blobDir     string
	blobDirErr  error
)

// documentBlobDir is the blob directory of the stack's document service, so
// that tests can check what is stored.
func documentBlobDir() (string, error) {
	blobDirOnce.Do(func() { blobDir, blobDirErr = os.MkdirTemp("", "docrepo-e2e-blobs-") })
	return blobDir, blobDirErr
}

func init() {
	registry["document"] = func(ctx context.Context, env serviceEnv) error {
		dir, err := documentBlobDir()
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		return documentsvc.Run(ctx, documentsvc.Config{
			Common:         env.common,
			FolderAddr:     env.addrs["folder"],
			SchemaAddr:     env.addrs["schema"],
			BlobDir:        dir,
			MaxUploadBytes: docMaxUpload,
			Listener:       env.listener,
			Logger:         env.logger,
		})
	}
}
