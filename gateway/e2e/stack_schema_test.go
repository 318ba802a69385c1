package e2e

import (
	"context"

	"github.com/docrepo/docrepo/services/schema/schemasvc"
)

func init() {
	registry["schema"] = func(ctx context.Context, env serviceEnv) error {
		return schemasvc.Run(ctx, schemasvc.Config{
			Common:       env.common,
			DocumentAddr: env.addrs["document"],
			Listener:     env.listener,
			Logger:       env.logger,
		})
	}
}
