package devicemanager

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

func TestCapacity(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		rs                map[string]ResourceState
		wantCap, wantAllo map[string]int64
		wantExpired       []string
	}{
		"healthy and unhealthy": {
			rs:       map[string]ResourceState{"example.com/a": {Healthy: 2, Unhealthy: 1, Connected: true}},
			wantCap:  map[string]int64{"example.com/a": 3},
			wantAllo: map[string]int64{"example.com/a": 2},
		},
		"plugin gone within the grace: capacity kept, nothing allocatable": {
			rs:       map[string]ResourceState{"example.com/a": {Healthy: 2, StoppedAt: t0.Add(-StopGracePeriod)}},
			wantCap:  map[string]int64{"example.com/a": 2},
			wantAllo: map[string]int64{"example.com/a": 0},
		},
		"plugin gone past the grace: expired": {
			rs:          map[string]ResourceState{"example.com/a": {Healthy: 2, StoppedAt: t0.Add(-StopGracePeriod - time.Second)}, "example.com/b": {Healthy: 1, Connected: true}},
			wantCap:     map[string]int64{"example.com/b": 1},
			wantAllo:    map[string]int64{"example.com/b": 1},
			wantExpired: []string{"example.com/a"},
		},
		"known from the checkpoint only": {
			rs:       map[string]ResourceState{"example.com/a": {StoppedAt: t0}},
			wantCap:  map[string]int64{"example.com/a": 0},
			wantAllo: map[string]int64{"example.com/a": 0},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := Capacity(tc.rs, t0)
			if !reflect.DeepEqual(c.Capacity, tc.wantCap) || !reflect.DeepEqual(c.Allocatable, tc.wantAllo) || !reflect.DeepEqual(c.Expired, tc.wantExpired) {
				t.Errorf("Capacity = %+v, want capacity %v allocatable %v expired %v", c, tc.wantCap, tc.wantAllo, tc.wantExpired)
			}
		})
	}
}

func TestChoose(t *testing.T) {
	tests := map[string]struct {
		need                           int
		reusable, available, preferred []string
		want                           []string
		wantErr                        string
	}{
		"in order":                   {need: 2, available: []string{"a", "b", "c"}, want: []string{"a", "b"}},
		"preferred first":            {need: 2, available: []string{"a", "b", "c"}, preferred: []string{"c", "x"}, want: []string{"c", "a"}},
		"reusable first":             {need: 2, reusable: []string{"r"}, available: []string{"a"}, want: []string{"r", "a"}},
		"reusable alone":             {need: 1, reusable: []string{"s", "r"}, available: nil, want: []string{"r"}},
		"too few (kubelet's error)":  {need: 3, available: []string{"a", "b"}, wantErr: "requested number of devices unavailable for example.com/r. Requested: 3, Available: 2"},
		"too few after the reusable": {need: 3, reusable: []string{"r"}, available: []string{"a"}, wantErr: "requested number of devices unavailable for example.com/r. Requested: 2, Available: 1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Choose("example.com/r", tc.need, tc.reusable, SplitByAffinity(tc.available, nil, 0), tc.preferred)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Choose = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestAvailable(t *testing.T) {
	got := Available([]string{"c", "a", "b"}, map[string]bool{"b": true})
	if !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Errorf("Available = %v", got)
	}
}

func TestMergeResponses(t *testing.T) {
	a := &pluginapi.ContainerAllocateResponse{
		Envs:        map[string]string{"B": "1", "A": "x"},
		Mounts:      []*pluginapi.Mount{{ContainerPath: "/dev-a", HostPath: "/tmp/a", ReadOnly: true}},
		Devices:     []*pluginapi.DeviceSpec{{ContainerPath: "/dev/d0", HostPath: "/dev/d0", Permissions: "rw"}},
		Annotations: map[string]string{"vendor/x": "1"},
		CdiDevices:  []*pluginapi.CDIDevice{{Name: "example.com/r=d0"}},
	}
	b := &pluginapi.ContainerAllocateResponse{
		Envs:        map[string]string{"A": "y", "C": "2"},
		Mounts:      []*pluginapi.Mount{{ContainerPath: "/dev-a", HostPath: "/tmp/other"}},
		Devices:     []*pluginapi.DeviceSpec{{ContainerPath: "/dev/d0", HostPath: "/dev/d0"}},
		Annotations: map[string]string{"vendor/x": "1"},
		CdiDevices:  []*pluginapi.CDIDevice{{Name: "example.com/r=d0"}, {Name: "example.com/r=d1"}},
	}
	got, conflicts := MergeResponses([]*pluginapi.ContainerAllocateResponse{a, nil, b})
	want := podconfig.ContainerDevices{
		Devices:     []podconfig.DeviceSpec{{ContainerPath: "/dev/d0", HostPath: "/dev/d0", Permissions: "rw"}},
		Mounts:      []podconfig.DeviceMount{{ContainerPath: "/dev-a", HostPath: "/tmp/a", ReadOnly: true}},
		Envs:        []podconfig.KeyValue{{Key: "A", Value: "x"}, {Key: "B", Value: "1"}, {Key: "C", Value: "2"}},
		Annotations: []podconfig.KeyValue{{Key: "vendor/x", Value: "1"}},
		CDIDevices:  []string{"example.com/r=d0", "example.com/r=d1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MergeResponses = %+v\nwant %+v", got, want)
	}
	if len(conflicts) != 2 { // env A, mount /dev-a (the device is the same)
		t.Errorf("conflicts = %q", conflicts)
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	a := allocations{}
	resp := &pluginapi.ContainerAllocateResponse{Envs: map[string]string{"K": "v"}, Mounts: []*pluginapi.Mount{{ContainerPath: "/x", HostPath: "/tmp/x"}}}
	a.set("uid-1", "app", "example.com/r", &ContainerAllocation{DeviceIDs: []string{"d1", "d0"}, Response: resp})
	numa := func(_, id string) []int64 {
		if id == "d1" {
			return []int64{0}
		}
		return nil
	}
	d, err := toCheckpoint(a, map[string][]string{"example.com/r": {"d1", "d0"}}, numa)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.PodDeviceEntries[0].DeviceIDs; !reflect.DeepEqual(got, map[string][]string{"-1": {"d0"}, "0": {"d1"}}) {
		t.Errorf("device IDs per NUMA node = %v", got)
	}
	b, err := EncodeCheckpoint(d)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.RegisteredDevices, map[string][]string{"example.com/r": {"d0", "d1"}}) {
		t.Errorf("registered = %v", back.RegisteredDevices)
	}
	got, err := fromCheckpoint(back)
	if err != nil {
		t.Fatal(err)
	}
	ca := got.get("uid-1", "app", "example.com/r")
	if ca == nil || !reflect.DeepEqual(ca.DeviceIDs, []string{"d0", "d1"}) || ca.Response.Envs["K"] != "v" || ca.Response.Mounts[0].HostPath != "/tmp/x" {
		t.Errorf("allocation back = %+v", ca)
	}
	// A changed byte of the data is noticed.
	tampered := []byte(string(b))
	for i := range tampered {
		if tampered[i] == 'd' && string(tampered[i:i+2]) == "d0" {
			tampered[i+1] = '9'
			break
		}
	}
	if _, err := DecodeCheckpoint(tampered); !errors.Is(err, ErrChecksum) {
		t.Errorf("tampered checkpoint: err = %v, want ErrChecksum", err)
	}
}

func TestHeldUsable(t *testing.T) {
	const name = "example.com/r"
	tests := map[string]struct {
		registered    bool
		healthy, held []string
		wantErr       string
	}{
		"plugin not back":          {registered: false, healthy: nil, held: []string{"d0"}, wantErr: "cannot allocate unregistered device example.com/r"},
		"back, nothing healthy":    {registered: true, healthy: nil, held: []string{"d0"}, wantErr: "no healthy devices present; cannot allocate unhealthy devices example.com/r"},
		"back, held one unhealthy": {registered: true, healthy: []string{"d1"}, held: []string{"d0"}, wantErr: "previously allocated devices are no longer healthy; cannot allocate unhealthy devices example.com/r"},
		"back, held ones healthy":  {registered: true, healthy: []string{"d0", "d1"}, held: []string{"d1", "d0"}},
	}
	for n, tt := range tests {
		t.Run(n, func(t *testing.T) {
			err := HeldUsable(name, tt.registered, tt.healthy, tt.held)
			if got := fmt.Sprint(err); (tt.wantErr == "" && err != nil) || (tt.wantErr != "" && got != tt.wantErr) {
				t.Errorf("HeldUsable = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
