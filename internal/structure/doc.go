// Package structure holds no code: its tests check the rules of the
// project's layout that a review would otherwise have to remember.
//
//   - The kernel side (bpf, cgroups, kevents, oom, eviction) imports no
//     package of the pod side (agent, status, cmd, internal/clientset),
//     directly or through another package.
//   - No product function (tests, test/, bench/ and generated files left
//     out) is longer than 100 lines.
//   - The agent root package is the composition root: at most 3,000 lines
//     of product code, and no file in it is named like one of its
//     sub-packages (agent/stats.go beside agent/stats/).
package structure
