package e2e

import "context"

func init() {
	registry["schema"] = func(context.Context, serviceEnv) ([]string, error) { return nil, nil }
}
