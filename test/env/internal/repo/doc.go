// Package repo locates the kernelet repository for the test environment
// (build scripts, packages to build). It is internal to test/env.
package repo
