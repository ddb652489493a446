// Package release cuts a release of the repository's modules and serves
// them from a file-system module proxy, so that the release can be tried
// as a user outside the repository would try it.
//
// The repository holds one root module (github.com/unherd/unherd) and
// nested modules (unherdgrpc, unherdredis, cmd/unherd, ...) that require
// it and each other. They are released together at one version, as
// multi-module Go repositories are: Prepare makes every requirement on a
// module of the repository name the release's version, writes each nested
// module's go.sum lines for the modules of the repository it needs (in
// dependency order, since a module's go.sum is part of its own content),
// commits that as one commit and tags every module there: the root as
// vX.Y.Z, a nested module in directory d as d/vX.Y.Z, the tag names the go
// command looks for.
//
// WriteProxy writes the modules at a tagged version in the layout of a
// GOPROXY (file://DIR), the zips made from the tags exactly as a public
// proxy would make them from the repository. The package's test cuts a
// release in a clone of the repository, serves it this way and, with
// GOWORK=off, installs the command with go install and depends on every
// nested module from a fresh module with go get.
//
// scripts/release.sh is the command line: it runs Prepare on the checkout,
// and publishing is pushing the commit and its tags.
package release
