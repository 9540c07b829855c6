// Package images builds the OCI images kernelet's tests run — a pause image
// and busybox plus the static testbox workload — without any registry: it
// writes image layouts byte for byte reproducibly (Build, WriteOCILayout,
// ReadOCILayout), builds the standard test set (BuildSet, TestboxBinary),
// and serves images from an in-memory OCI registry on loopback (Registry,
// ServeRegistry) that containerd uses as the mirror for TestRegistryHost.
//
// It starts no processes and touches nothing outside the files it is told
// to write. For tests and hack/ tools only; kernelet never imports it.
package images
