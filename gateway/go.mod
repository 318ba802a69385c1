module github.com/docrepo/docrepo/gateway

go 1.26.0

require (
	github.com/docrepo/docrepo/pkg v0.0.0
	github.com/docrepo/docrepo/services/document v0.0.0
	github.com/docrepo/docrepo/services/folder v0.0.0
	github.com/docrepo/docrepo/services/schema v0.0.0
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.30.0
	github.com/jackc/pgx/v5 v5.12.0
	github.com/prometheus/client_golang v1.25.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

// Offline checks of the deployment files and the OpenAPI document.
require (
	github.com/compose-spec/compose-go/v2 v2.16.2
	github.com/getkin/kin-openapi v0.152.0
	k8s.io/api v0.37.2
	sigs.k8s.io/kustomize/api v0.21.2
	sigs.k8s.io/kustomize/kyaml v0.21.2
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/blang/semver/v4 v4.0.0 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/docrepo/docrepo/services/indexer v0.0.0
	github.com/docrepo/docrepo/services/search v0.0.0
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/nats-io/nats.go v1.55.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260928230214-8a89bd6388cc // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260928230214-8a89bd6388cc // indirect
)

replace (
	github.com/docrepo/docrepo/pkg => ../pkg
	github.com/docrepo/docrepo/services/document => ../services/document
	github.com/docrepo/docrepo/services/folder => ../services/folder
	github.com/docrepo/docrepo/services/schema => ../services/schema
)

replace github.com/docrepo/docrepo/services/search => ../services/search

replace github.com/docrepo/docrepo/services/indexer => ../services/indexer
