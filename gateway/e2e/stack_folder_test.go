package e2e

import "context"

func init() {
	registry["folder"] = func(context.Context, serviceEnv) ([]string, error) { return nil, nil }
}
