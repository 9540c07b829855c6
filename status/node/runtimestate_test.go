package node

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/eviction"
)

// countingRuntime answers Version and Status (failing with err) and
// counts the asks; other methods panic through the nil interface.
type countingRuntime struct {
	internalapi.RuntimeService
	asks int
	err  error
}

func (f *countingRuntime) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	f.asks++
	if f.err != nil {
		return nil, f.err
	}
	return &runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "2.1"}, nil
}

func (f *countingRuntime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{}}, nil
}

func TestRuntimeStates(t *testing.T) {
	now := time.Unix(1000, 0)
	r := &RuntimeStates{Period: 5 * time.Second, Now: func() time.Time { return now }}
	ctx := context.Background()
	if st := r.Get(ctx, nil); !st.LastSync.IsZero() {
		t.Fatalf("no runtime: %+v", st)
	}
	rs := &countingRuntime{}
	if st := r.Get(ctx, rs); st.Name != "containerd" || !st.LastSync.Equal(now) || rs.asks != 1 {
		t.Fatalf("first ask: %+v after %d asks", st, rs.asks)
	}
	now = now.Add(4 * time.Second)
	if r.Get(ctx, rs); rs.asks != 1 {
		t.Fatalf("asked again within the period: %d asks", rs.asks)
	}
	now = now.Add(2 * time.Second)
	rs.err = errors.New("down")
	if st := r.Get(ctx, rs); rs.asks != 2 || st.Name != "containerd" || !st.LastSync.Equal(now.Add(-6*time.Second)) {
		t.Fatalf("a failed ask must keep the last answer: %+v after %d asks", st, rs.asks)
	}
	if r.Get(ctx, rs); rs.asks != 2 {
		t.Fatalf("a failed ask starts a period too: %d asks", rs.asks)
	}
}

func TestInputsSetPressure(t *testing.T) {
	for name, tc := range map[string]struct {
		conds                  []v1.NodeConditionType
		psi                    bool
		mem, disk, pid         bool
		wantPSI, wantPSIReport bool
	}{
		"none":                 {},
		"memory and disk":      {conds: []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure}, mem: true, disk: true},
		"pid":                  {conds: []v1.NodeConditionType{v1.NodePIDPressure}, pid: true},
		"psi condition off":    {conds: []v1.NodeConditionType{eviction.ConditionPSIPressure}},
		"psi condition, calm":  {psi: true, wantPSIReport: true},
		"psi condition, under": {conds: []v1.NodeConditionType{eviction.ConditionPSIPressure}, psi: true, wantPSIReport: true, wantPSI: true},
	} {
		t.Run(name, func(t *testing.T) {
			var in Inputs
			in.SetPressure(tc.conds, tc.psi)
			if in.MemoryPressure != tc.mem || in.DiskPressure != tc.disk || in.PIDPressure != tc.pid {
				t.Errorf("memory %v disk %v pid %v", in.MemoryPressure, in.DiskPressure, in.PIDPressure)
			}
			if (in.PSIPressure != nil) != tc.wantPSIReport || in.PSIPressure != nil && *in.PSIPressure != tc.wantPSI {
				t.Errorf("PSIPressure %v, want reported %v = %v", in.PSIPressure, tc.wantPSIReport, tc.wantPSI)
			}
		})
	}
}
