// Package apiserver runs a real, private Kubernetes control plane for
// kernelet's tests, offline on 127.0.0.1: etcd, kube-apiserver (Node,RBAC
// authorization; NodeRestriction and ServiceAccount admission),
// kube-controller-manager and kube-scheduler, built from the Go module
// proxy by hack/apiserver/build.sh and cached outside the repository
// (Build, EnsureBinaries, CachedBinaries; `make components`).
//
// Start brings it up with a throw-away PKI and waits until namespace
// default has its ServiceAccount and kube-root-ca.crt ConfigMap; Shared
// gives the tests of one binary one instance. Credentials: an admin
// (system:masters) client and, per node name, the system:node:<name>
// credential a kubelet has (NodeKubeconfig, NodeClient). Stop and Down
// stop the processes by PID, after checking they are the state dir's own,
// and remove the state dir. StopAPIServer and StartAPIServer stop and
// start kube-apiserver alone (same port and flags, etcd kept), for fault
// tests.
//
// The aggregation layer is on (a front-proxy-client certificate,
// --enable-aggregator-routing): StartMetricsServer runs metrics-server
// (hack/metrics-server/build.sh, EnsureMetricsServer) as a host process
// and registers it as APIService v1beta1.metrics.k8s.io through a Service
// and EndpointSlice in kube-system, for `kubectl top`; its Stop removes
// the APIService first.
//
// For tests and hack/ tools only; kernelet never imports it.
package apiserver
