package devicemanager

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// A device turning unhealthy shows in the holding container's
// allocatedResourcesStatus, and the pod holding it is sent on
// HealthUpdates; a change of a device nobody holds is not.
func TestHealthStatus(t *testing.T) {
	dev := func(id, health string) *pluginapi.Device { return &pluginapi.Device{ID: id, Health: health} }
	p := &testPlugin{devs: []*pluginapi.Device{dev("d0", pluginapi.Healthy), dev("d1", pluginapi.Healthy)},
		updates: make(chan []*pluginapi.Device)}
	m := startWithPlugin(t, Config{}, p, 2)
	if got := m.HealthStatus("uid-1", "app"); got != nil {
		t.Errorf("before any allocation: %v", got)
	}
	if r := admit(t, m, devicePod("uid-1", "one", 1)); !r.Admit {
		t.Fatal(r)
	}
	held := m.Devices("uid-1", "app")[0].DeviceIDs[0]
	other := map[string]string{"d0": "d1", "d1": "d0"}[held]
	health := func() v1.ResourceHealthStatus {
		st := m.HealthStatus("uid-1", "app")
		if len(st) != 1 || st[0].Name != "example.com/r" || len(st[0].Resources) != 1 || string(st[0].Resources[0].ResourceID) != held {
			t.Fatalf("HealthStatus = %+v, want one entry for %s", st, held)
		}
		return st[0].Resources[0].Health
	}
	if h := health(); h != v1.ResourceHealthStatusHealthy {
		t.Errorf("health %s, want Healthy", h)
	}

	p.updates <- []*pluginapi.Device{dev(held, pluginapi.Healthy), dev(other, pluginapi.Unhealthy)}
	eventually(t, "the other device unhealthy", func() bool { _, a := m.Capacity(); return a["example.com/r"] == 1 })
	select {
	case uids := <-m.HealthUpdates():
		t.Errorf("update %v for a device no pod holds", uids)
	case <-time.After(100 * time.Millisecond):
	}

	p.updates <- []*pluginapi.Device{dev(held, pluginapi.Unhealthy), dev(other, pluginapi.Unhealthy)}
	select {
	case uids := <-m.HealthUpdates():
		if !reflect.DeepEqual(uids, []types.UID{"uid-1"}) {
			t.Errorf("update %v, want the holder", uids)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no update for the holder of a device turned unhealthy")
	}
	if h := health(); h != v1.ResourceHealthStatusUnhealthy {
		t.Errorf("health %s, want Unhealthy", h)
	}
}
