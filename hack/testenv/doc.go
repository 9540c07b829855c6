// Command testenv brings kernelet's real test components up and down by
// hand, for `make demo`, for debugging, and for cleaning up after a crash:
//
//	testenv containerd up|down ...
//	testenv registry serve --state DIR
//	testenv apiserver build|up|down ...
//	testenv vm run|down ...
//	testenv reap [--dry-run]
//
// reap (run by `make test` and the other real-component targets first)
// removes what killed runs left: runs under the state base whose owner
// locks are all free. Each component registers its sub-commands from its
// own file; `testenv` without arguments lists them. It is a front end of
// test/env and holds no component logic of its own.
package main
