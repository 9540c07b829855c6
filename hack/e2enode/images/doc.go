// Command images builds, offline, the container images the upstream node
// e2e specs that hack/e2enode/run.sh runs ask for, under their upstream
// names, and imports them into a containerd:
//
//	go run ./hack/e2enode/images --sample-device-plugin BIN --out FILE [--import SOCKET]
//
// registry.k8s.io/e2e-test-images/busybox:1.37.0-2 is busybox-static with
// its applets (Cmd sh, as upstream's); registry.k8s.io/e2e-test-images/
// sample-device-plugin:1.8.0 is the sample device plugin built from
// k8s.io/kubernetes by hack/apiserver/build.sh (SAMPLE_DEVICE_PLUGIN=1) with
// upstream's entrypoint. FILE is an OCI image-layout tar of both; --import
// imports it into the k8s.io namespace. The names are those of kubernetes
// v1.37.2's test/utils/image manifest and sample device plugin manifests.
package main
