package oom

import (
	"testing"

	"github.com/kernelet/kernelet/cgroups"
)

const gi = int64(1) << 30

func TestScoreAdj(t *testing.T) {
	capacity := 8 * gi
	app := func(req int64) Container { return Container{Name: "app", MemoryRequest: req} }
	cases := map[string]struct {
		pod  Pod
		c    Container
		want int
	}{
		"guaranteed":                             {Pod{QOS: cgroups.Guaranteed}, app(gi), -997},
		"node-critical burstable":                {Pod{QOS: cgroups.Burstable, NodeCritical: true}, app(0), -997},
		"node-critical besteffort":               {Pod{QOS: cgroups.BestEffort, NodeCritical: true}, app(0), -997},
		"besteffort":                             {Pod{QOS: cgroups.BestEffort}, app(0), 1000},
		"burstable 1Gi of 8Gi":                   {Pod{QOS: cgroups.Burstable}, app(gi), 875}, // 1000 - 1000/8
		"burstable 512Mi of 8Gi":                 {Pod{QOS: cgroups.Burstable}, app(gi / 2), 938},
		"burstable rounding: 1000-999.99.. ":     {Pod{QOS: cgroups.Burstable}, app(capacity - 1), 3},  // 1000-999 = 1 → clamp 3
		"burstable request ≥ capacity":           {Pod{QOS: cgroups.Burstable}, app(2 * capacity), 3},  // negative → 3
		"burstable no memory request":            {Pod{QOS: cgroups.Burstable}, app(0), 999},           // 1000 → 999
		"burstable tiny request":                 {Pod{QOS: cgroups.Burstable}, app(1 << 20), 999},     // 1000-0 (integer) → 999
		"burstable exactly 3":                    {Pod{QOS: cgroups.Burstable}, app(7_976_000_000), 3}, // of 8e9: 1000-997,
		"burstable 4 stays 4":                    {Pod{QOS: cgroups.Burstable}, app(7_968_000_000), 4}, // 1000-996
		"integer floor":                          {Pod{QOS: cgroups.Burstable}, app(7_975_999_999), 4}, // 996.99.. → 996,
		"no capacity known":                      {Pod{QOS: cgroups.Burstable}, app(gi), 999},
		"negative request treated as no request": {Pod{QOS: cgroups.Burstable}, app(-5), 999},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := capacity
			switch name {
			case "no capacity known":
				c = 0
			case "burstable exactly 3", "burstable 4 stays 4", "integer floor":
				c = 8_000_000_000
			}
			if got := ScoreAdj(tc.pod, tc.c, c); got != tc.want {
				t.Errorf("ScoreAdj = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestScoreAdjSidecar(t *testing.T) {
	capacity := 8 * gi
	pod := Pod{QOS: cgroups.Burstable, Containers: []Container{
		{Name: "big", MemoryRequest: 4 * gi},   // 500
		{Name: "small", MemoryRequest: gi / 2}, // 938
	}}
	cases := map[string]struct {
		c    Container
		want int
	}{
		"sidecar with no request is capped by the smallest regular container": {Container{Name: "proxy", Sidecar: true}, 938},
		"sidecar requesting more keeps its own lower value":                   {Container{Name: "proxy", MemoryRequest: 6 * gi, Sidecar: true}, 250},
		"regular container unaffected":                                        {Container{Name: "small", MemoryRequest: gi / 2}, 938},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ScoreAdj(pod, tc.c, capacity); got != tc.want {
				t.Errorf("ScoreAdj = %d, want %d", got, tc.want)
			}
		})
	}
	// A pod of only sidecars: no regular container to compare with.
	if got := ScoreAdj(Pod{QOS: cgroups.Burstable}, Container{Sidecar: true, MemoryRequest: gi}, capacity); got != 875 {
		t.Errorf("sidecar-only pod: %d, want 875", got)
	}
}

func TestScoreAdjOrdering(t *testing.T) {
	// Whatever the request, Guaranteed < Burstable < BestEffort.
	capacity := 4 * gi
	for req := int64(0); req <= 2*capacity; req += capacity / 64 {
		b := ScoreAdj(Pod{QOS: cgroups.Burstable}, Container{MemoryRequest: req}, capacity)
		if b <= GuaranteedScoreAdj || b >= BestEffortScoreAdj {
			t.Fatalf("request %d: burstable %d not strictly between guaranteed and besteffort", req, b)
		}
	}
}
