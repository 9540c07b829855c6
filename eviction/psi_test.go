package eviction

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestParsePSIThresholds(t *testing.T) {
	root := field.NewPath("KerneletConfiguration")
	th, errs := ParseThresholds(Config{PSI: true, Path: root,
		Hard:            map[string]string{"kubepods.memory.pressure.some.avg10": "20%", "io.pressure.full.avg10": "40"},
		Soft:            map[string]string{"cpu.pressure.some.avg10": "80%"},
		SoftGracePeriod: map[string]string{"cpu.pressure.some.avg10": "30s"},
		MinimumReclaim:  map[string]string{"kubepods.memory.pressure.some.avg10": "5%"},
	})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	var got []string
	for _, x := range th {
		s := string(x.Signal) + ">" + x.Value.String() + " " + string(x.Operator)
		if x.MinReclaim != nil {
			s += " reclaim " + x.MinReclaim.String()
		}
		if !x.Hard() {
			s += " grace " + x.GracePeriod.String()
		}
		got = append(got, s)
	}
	want := "io.pressure.full.avg10>40% GreaterThan|kubepods.memory.pressure.some.avg10>20% GreaterThan reclaim 5%|cpu.pressure.some.avg10>80% GreaterThan grace 30s"
	if strings.Join(got, "|") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, "|"), want)
	}

	_, errs = ParseThresholds(Config{PSI: true, Path: root,
		Hard: map[string]string{"memory.available": "100Mi", "memory.pressure.some.avg10": "100%", "cpu.pressure.full.avg10": "10%", "io.pressure.full.avg10": "lots"},
	})
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	for _, w := range []string{
		`KerneletConfiguration.evictionHard[cpu.pressure.full.avg10]: Unsupported value: "cpu.pressure.full.avg10"`,
		`KerneletConfiguration.evictionHard[io.pressure.full.avg10]: Invalid value: "lots": must be a percentage of stalled time (e.g. 20%)`,
		`KerneletConfiguration.evictionHard[memory.available]: Invalid value: "memory.available": a kubelet signal: set it in the KubeletConfiguration`,
		`KerneletConfiguration.evictionHard[memory.pressure.some.avg10]: Invalid value: "100%": must be above 0% and below 100%`,
	} {
		if !strings.Contains(strings.Join(msgs, "\n"), w) {
			t.Errorf("missing %q in\n%s", w, strings.Join(msgs, "\n"))
		}
	}
	// And the other way round: kubelet's maps refuse PSI signals.
	_, errs = ParseThresholds(Config{Hard: map[string]string{"memory.pressure.some.avg10": "10%"}})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "set it in the KerneletConfiguration (kernelet.io/v1alpha1)") {
		t.Errorf("PSI signal in evictionHard: %v", errs)
	}
}

func TestObservePSIAndMet(t *testing.T) {
	s := Stats{Time: time.Unix(10, 0),
		NodePressure:     &PSIStats{MemorySome: PSIValue{Known: true, Avg10: 12.34}, CPUSome: PSIValue{Known: true, Avg10: 1}},
		KubepodsPressure: &PSIStats{MemorySome: PSIValue{Known: true, Avg10: 35.2}, MemoryFull: PSIValue{Known: true, Avg10: 20}}}
	obs := Observe(s)
	if o := obs[SignalKubepodsMemoryPressureSome]; o.Available != 3520 || o.Capacity != 10000 || !o.Time.Equal(s.Time) {
		t.Errorf("kubepods memory some %+v", o)
	}
	if o := obs[SignalMemoryPressureSome]; o.Available != 1234 {
		t.Errorf("node memory some %+v", o)
	}
	if _, ok := obs[SignalIOPressureFull]; ok {
		t.Error("an unknown PSI line is observed")
	}
	th, _ := ParseThresholds(Config{PSI: true,
		Hard:           map[string]string{"kubepods.memory.pressure.some.avg10": "30%", "kubepods.memory.pressure.full.avg10": "20%"},
		MinimumReclaim: map[string]string{"kubepods.memory.pressure.some.avg10": "10%"}})
	met := ThresholdsMet(th, obs, false)
	if len(met) != 1 || met[0].Signal != SignalKubepodsMemoryPressureSome {
		t.Fatalf("met %v (full at exactly 20%% is not above 20%%)", met)
	}
	// Hysteresis: met until the stall falls to 30% − 10%.
	obs[SignalKubepodsMemoryPressureSome] = Observation{Available: 2500, Capacity: psiScale}
	if len(ThresholdsMet(th[:1], obs, false)) != 0 && th[0].Signal == SignalKubepodsMemoryPressureSome {
		t.Error("25% met a 30% threshold")
	}
	if got := ThresholdsMet(th, obs, true); len(got) != 1 || got[0].Signal != SignalKubepodsMemoryPressureSome {
		t.Errorf("with min reclaim, 25%% must stay met: %v", got)
	}
	if ConditionOf(SignalKubepodsMemoryPressureSome) != ConditionPSIPressure || ResourceOf(SignalIOPressureFull) != "io" ||
		ResourceOf(SignalKubepodsMemoryPressureFull) != v1.ResourceMemory || ResourceOf(SignalCPUPressureSome) != "cpu" {
		t.Error("condition or resource of PSI signals")
	}
}

func TestManagerPSIEvictsOnePodThenWaits(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(5000, 0))
	n := &fakeNode{capacity: 1024 * mi, usage: map[types.UID]int64{}}
	a, b := mkPod("a"), mkPod("b", memRequest("10Mi"))
	n.pods = []*v1.Pod{a, b}
	n.set(a, 100, true)
	n.set(b, 200, true)
	stall := 50.0
	th, _ := ParseThresholds(Config{PSI: true, Hard: map[string]string{"kubepods.memory.pressure.some.avg10": "20%"}})
	m, _ := NewManager(ManagerConfig{Thresholds: th, Clock: clk, PressureTransitionPeriod: time.Minute,
		Stats: func(ctx context.Context, pods []*v1.Pod) (Stats, error) {
			s, err := n.stats(ctx, pods)
			s.KubepodsPressure = &PSIStats{MemorySome: PSIValue{Known: true, Avg10: stall}}
			return s, err
		}, ActivePods: n.active, Evict: n.evict})
	for range 3 {
		if err := m.Synchronize(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(n.evicted) != 1 || n.evicted[0] != "b" {
		t.Fatalf("evicted %v, want the pod most above its request only, while it frees its memory", n.evicted)
	}
	want := "The node was low on resource: memory. Pressure kubepods.memory.pressure.some.avg10: 50%, threshold: 20%. " +
		"Container app was using 200Mi, request is 10Mi, has larger consumption of memory. "
	if n.messages[0] != want {
		t.Errorf("message %q\nwant    %q", n.messages[0], want)
	}
	if c := m.Conditions(); len(c) != 1 || c[0] != ConditionPSIPressure {
		t.Errorf("conditions %v", c)
	}
	st := m.Status()
	if ts := st.Thresholds[0]; !ts.PSI || ts.Available != 5000 || ts.Quantity != 2000 || !ts.Met || ts.ObservedAt.IsZero() {
		t.Errorf("threshold status %+v", ts)
	}
	// The pod's cgroup is gone: the stall stays, the next pod goes.
	n.set(b, 0, false)
	if err := m.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(n.evicted) != 2 {
		t.Errorf("evicted %v", n.evicted)
	}
}
