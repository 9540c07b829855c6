package dra

import (
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// fakeHealth streams the reports it is given.
type fakeHealth struct {
	drahealthv1.UnimplementedDRAResourceHealthServer
	reports chan *drahealthv1.NodeWatchResourcesResponse
}

func (f *fakeHealth) NodeWatchResources(_ *drahealthv1.NodeWatchResourcesRequest, s drahealthv1.DRAResourceHealth_NodeWatchResourcesServer) error {
	for {
		select {
		case <-s.Context().Done():
			return nil
		case r := <-f.reports:
			if err := s.Send(r); err != nil {
				return err
			}
		}
	}
}

func report(device string, h drahealthv1.HealthStatus, msg string) *drahealthv1.NodeWatchResourcesResponse {
	return &drahealthv1.NodeWatchResourcesResponse{Devices: []*drahealthv1.DeviceHealth{
		{Device: &drahealthv1.DeviceIdentifier{PoolName: "node", DeviceName: device}, Health: h, Message: msg}}}
}

func TestHealthStatus(t *testing.T) {
	pod := podWith("a", "c", "gpu")
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "whole",
		Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "dev"}}}})
	f, h := &fakePlugin{}, &fakeHealth{reports: make(chan *drahealthv1.NodeWatchResourcesResponse)}
	startPlugin(t, f, false, h)

	m, _ := newTestManager(t, t.TempDir(), allocated("c", pod))
	register(t, m, f, drapb.DRAPluginService, drahealthv1.DRAResourceHealthService)
	if err := m.PrepareResources(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	unknown := []v1.ResourceStatus{{Name: "claim:dev/gpu", Resources: []v1.ResourceHealth{
		{ResourceID: testDriver + "/gpu=uid-c", Health: v1.ResourceHealthStatusUnknown}}}}
	if got := m.HealthStatus(pod, "app"); !reflect.DeepEqual(got, unknown) {
		t.Errorf("before any report: %+v, want %+v", got, unknown)
	}
	h.reports <- report("gpu-0", drahealthv1.HealthStatus_UNHEALTHY, "ECC errors")
	select {
	case uids := <-m.HealthUpdates():
		if len(uids) != 1 || uids[0] != pod.UID {
			t.Errorf("updates for %v, want the pod", uids)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no update after the driver reported a device unhealthy")
	}
	got := m.HealthStatus(pod, "app")
	if len(got) != 1 || got[0].Resources[0].Health != v1.ResourceHealthStatusUnhealthy || got[0].Resources[0].Message == nil ||
		*got[0].Resources[0].Message != "ECC errors" {
		t.Errorf("after the report: %+v", got)
	}
	whole := m.HealthStatus(pod, "whole")
	if len(whole) != 1 || whole[0].Name != "claim:dev" || len(whole[0].Resources) != 2 {
		t.Errorf("the whole claim: %+v, want both devices", whole)
	}
	if m.HealthStatus(pod, "missing") != nil {
		t.Error("a container that is not in the pod has a status")
	}
	if got := truncateMessage(strings.Repeat("x", 2000)); len(got) != v1.ResourceHealthMessageMaxLength || !strings.HasSuffix(got, "...") {
		t.Errorf("truncated to %d", len(got))
	}
	m.DeRegisterPlugin(t.Context(), testDriver, f.endpoint)
}

func TestHealthTimeout(t *testing.T) {
	m := New(Config{RootDir: t.TempDir()})
	now := time.Now()
	m.updateHealth("d", []*drahealthv1.DeviceHealth{{Device: &drahealthv1.DeviceIdentifier{PoolName: "p", DeviceName: "x"},
		Health: drahealthv1.HealthStatus_HEALTHY, HealthCheckTimeoutSeconds: 10}}, now)
	if h := m.deviceHealthAt("d", "p", "x", now.Add(5*time.Second)); h.health != v1.ResourceHealthStatusHealthy {
		t.Errorf("within the timeout: %v", h.health)
	}
	if h := m.deviceHealthAt("d", "p", "x", now.Add(11*time.Second)); h.health != v1.ResourceHealthStatusUnknown {
		t.Errorf("past the driver's timeout: %v", h.health)
	}
	m.updateHealth("d", nil, now.Add(11*time.Second))
	if len(m.health["d"]) != 0 {
		t.Error("a device not reported past its timeout is kept")
	}
}
