package dra

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
)

// TestHealthCheckpoint: a report is written to dra_health_state in
// kubelet's JSON and read back by a new Manager (an agent restart), where
// it holds until its timeout; a driver's stream ending clears it there.
func TestHealthCheckpoint(t *testing.T) {
	root := t.TempDir()
	m, _ := newTestManager(t, root)
	now := time.Now()
	m.updateHealth(testDriver, []*drahealthv1.DeviceHealth{
		{Device: &drahealthv1.DeviceIdentifier{PoolName: "pool/a", DeviceName: "gpu-0"}, Health: drahealthv1.HealthStatus_UNHEALTHY,
			Message: "ECC errors", HealthCheckTimeoutSeconds: 600}}, now)
	b, err := os.ReadFile(filepath.Join(root, HealthStateFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"` + testDriver + `":{"Devices":{"pool/a/gpu-0":{"PoolName":"pool/a","DeviceName":"gpu-0","Health":"Unhealthy"`,
		`"HealthCheckTimeout":600000000000,"Message":"ECC errors"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s: %s", HealthStateFile, want, b)
		}
	}

	m2, _ := newTestManager(t, root)
	h := m2.deviceHealthAt(testDriver, "pool/a", "gpu-0", now.Add(time.Minute))
	if h.health != v1.ResourceHealthStatusUnhealthy || h.message != "ECC errors" {
		t.Errorf("health after a restart: %+v, want the checkpointed Unhealthy", h)
	}
	if h := m2.deviceHealthAt(testDriver, "pool/a", "gpu-0", now.Add(11*time.Minute)); h.health != v1.ResourceHealthStatusUnknown {
		t.Errorf("health past its timeout after a restart: %+v, want Unknown", h)
	}
	m2.clearHealth(testDriver)
	m3, _ := newTestManager(t, root)
	if h := m3.deviceHealthAt(testDriver, "pool/a", "gpu-0", now); h.health != v1.ResourceHealthStatusUnknown {
		t.Errorf("health of a cleared driver read back: %+v", h)
	}

	if err := os.WriteFile(filepath.Join(root, HealthStateFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if m4, _ := newTestManager(t, root); len(m4.health) != 0 {
		t.Errorf("a corrupt health checkpoint gave %v, want an empty cache", m4.health)
	}
}
