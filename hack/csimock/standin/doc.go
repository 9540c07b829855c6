// Command standin stands in, in the conformance kit's offline cluster, for
// the two images of e2e's CSI mock driver that the Go module proxy cannot
// build (hack/csimock/build.sh makes images of it under the upstream names):
//
//	standin hostpathplugin -endpoint=/csi/csi.sock -proxy-endpoint=tcp://:9000 ...
//	standin registrar --csi-address=/csi/csi.sock --kubelet-registration-path=... ...
//
// hostpathplugin implements only the proxy mode that e2e's embedded mock
// driver uses (the specs with hooks): each connection to the CSI socket is
// paired, in order, with one connection accepted on the TCP endpoint (e2e
// keeps a few open there through port forwarding) and bytes are copied both
// ways until either side closes. Without -proxy-endpoint (the in-cluster
// mock driver of the other specs) it refuses to start, naming the flag.
//
// registrar does what node-driver-registrar does: asks the CSI driver its
// name (GetPluginInfo, retried until it answers), serves the
// pluginregistration.v1 API (test/csidriver's Registrar) on
// <plugin-registration-path>/<name>-reg.sock for the node agent, exits when
// the agent reports the registration failed, and answers /healthz on
// --http-endpoint. It is test tooling: never part of kernelet.
package main
