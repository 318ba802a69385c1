module github.com/docrepo/docrepo/services/schema

go 1.26.0

require github.com/docrepo/docrepo/pkg v0.0.0

replace github.com/docrepo/docrepo/pkg => ../../pkg
