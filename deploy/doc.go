// Package deploy holds what is deployed beside the binary — the systemd
// unit, the example configuration and pods, the Grafana dashboard
// (grafana/) and the Prometheus alert rules (prometheus/) — and the tests
// that keep the dashboard and rules valid (promtool) and naming only
// metrics kernelet exports (agent.MetricNames). It has no code.
package deploy
