// Package deploytest checks the deployment files offline against the code:
// docker-compose.yml (loaded with compose-go, the library Docker Compose
// itself uses), the Kubernetes manifests under deploy/k8s (rendered with
// kustomize's krusty and decoded strictly into the Kubernetes API types),
// deploy/Dockerfile, and the configuration reference docs/configuration.md.
//
// The configuration a command accepts is read from the code, never from a
// list kept here: each command's settings are what it registers on a
// config.Loader, as its -h lists them (pkg/config/configref). Every variable
// a deployment file gives a container must be one of those, or one of the
// OpenTelemetry SDK's OTEL_* variables; settings
// a container cannot work without must be present, and addresses must
// point at the container that serves them.
//
// Everything here is a test; the package has no API.
package deploytest
