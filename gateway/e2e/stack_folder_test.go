package e2e

import (
	"context"

	"github.com/docrepo/docrepo/services/folder/foldersvc"
)

func init() {
	registry["folder"] = func(ctx context.Context, env serviceEnv) error {
		return foldersvc.Run(ctx, foldersvc.Config{Common: env.common, Listener: env.listener, Logger: env.logger})
	}
}
