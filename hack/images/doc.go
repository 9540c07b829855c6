// Command images builds kernelet's test images offline as OCI image-layout
// tars, and optionally imports them into a containerd:
//
//	go run ./hack/images [--out DIR] [--testbox BIN] [--import SOCKET]
//
// DIR/images.tar holds registry.kernelet.test/pause:3.10 and
// registry.kernelet.test/testbox:v1 (what the test containerd imports);
// DIR/registry.tar adds registry.kernelet.test/testbox:mirror-only (what
// the test registry serves). The build is deterministic: the same sources,
// Go toolchain and busybox give the same digests. With --import the first
// tar is imported with `ctr -a SOCKET -n k8s.io images import`.
package main
