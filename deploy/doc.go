// Package deploy holds what is deployed beside the binary — the systemd
// unit, kubeadm's unit and drop-in for kernelet in kubelet's place
// (kubeadm/, started as the e2e TestKubeadmCommandLine does), the example
// configuration and pods, the Grafana dashboard
// (grafana/) and the Prometheus alert rules (prometheus/) — and the tests
// that keep the dashboard and rules valid (promtool) and naming only
// metrics kernelet exports (agent.MetricNames). It has no code.
package deploy
