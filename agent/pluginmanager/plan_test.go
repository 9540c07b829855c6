package pluginmanager

import (
	"reflect"
	"testing"
	"time"
)

func TestPlan(t *testing.T) {
	reg := func(path string, gen uint64) Plugin { return Plugin{SocketPath: path, Generation: gen} }
	for name, tc := range map[string]struct {
		desired      map[string]uint64
		registered   map[string]Plugin
		wantUnreg    []Plugin
		wantRegister []string
	}{
		"nothing": {},
		"new sockets registered in order": {
			desired:      map[string]uint64{"/r/b.sock": 2, "/r/a.sock": 1},
			wantRegister: []string{"/r/a.sock", "/r/b.sock"},
		},
		"registered and desired: nothing to do": {
			desired:    map[string]uint64{"/r/a.sock": 1},
			registered: map[string]Plugin{"/r/a.sock": reg("/r/a.sock", 1)},
		},
		"socket gone: unregistered": {
			registered: map[string]Plugin{"/r/a.sock": reg("/r/a.sock", 1)},
			wantUnreg:  []Plugin{reg("/r/a.sock", 1)},
		},
		"socket re-created: unregistered and registered again": {
			desired:      map[string]uint64{"/r/a.sock": 3},
			registered:   map[string]Plugin{"/r/a.sock": reg("/r/a.sock", 1)},
			wantUnreg:    []Plugin{reg("/r/a.sock", 1)},
			wantRegister: []string{"/r/a.sock"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			unreg, register := Plan(tc.desired, tc.registered)
			if !reflect.DeepEqual(unreg, tc.wantUnreg) || !reflect.DeepEqual(register, tc.wantRegister) {
				t.Errorf("Plan = %v, %v; want %v, %v", unreg, register, tc.wantUnreg, tc.wantRegister)
			}
		})
	}
}

func TestNextBackoff(t *testing.T) {
	for _, tc := range []struct{ last, want time.Duration }{
		{0, 500 * time.Millisecond},
		{500 * time.Millisecond, time.Second},
		{time.Minute, 2 * time.Minute},
		{2 * time.Minute, 2*time.Minute + 2*time.Second},
		{2*time.Minute + 2*time.Second, 2*time.Minute + 2*time.Second},
	} {
		if got := nextBackoff(tc.last); got != tc.want {
			t.Errorf("nextBackoff(%v) = %v, want %v", tc.last, got, tc.want)
		}
	}
}
