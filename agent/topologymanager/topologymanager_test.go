package topologymanager

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/agent/podworkers"
)

func TestMerge(t *testing.T) {
	two := NewMask(0, 1)
	for _, tc := range []struct {
		name   string
		hints  []map[string][]Hint
		single bool
		want   Hint
	}{
		{name: "no providers", want: Hint{NUMA: two, Preferred: true}},
		{name: "no preference", hints: []map[string][]Hint{nil, {"cpu": nil}}, want: Hint{NUMA: two, Preferred: true}},
		{name: "impossible", hints: []map[string][]Hint{{"cpu": {}}}, want: Hint{NUMA: two}},
		{name: "narrowest preferred", hints: []map[string][]Hint{{"cpu": {{NewMask(0), true}, {NewMask(1), true}, {two, false}}}},
			want: Hint{NUMA: NewMask(0), Preferred: true}},
		{name: "two resources agree on node 1", hints: []map[string][]Hint{
			{"cpu": {{NewMask(0), true}, {NewMask(1), true}}},
			{"device": {{NewMask(1), true}}}},
			want: Hint{NUMA: NewMask(1), Preferred: true}},
		{name: "disagreement is not preferred", hints: []map[string][]Hint{
			{"cpu": {{NewMask(0), true}}},
			{"device": {{NewMask(1), true}, {two, false}}}},
			want: Hint{NUMA: NewMask(0)}},
		{name: "single numa drops wide hints", single: true, hints: []map[string][]Hint{{"cpu": {{two, true}}}},
			want: Hint{NUMA: two}},
		{name: "non-preferred as wide as needed", hints: []map[string][]Hint{{"cpu": {{two, false}}}, {"device": {{NewMask(0), false}, {two, false}}}},
			want: Hint{NUMA: two}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Merge(two, tc.hints, tc.single); got != tc.want {
				t.Fatalf("Merge = %+v (%s), want %+v (%s)", got, got.NUMA, tc.want, tc.want.NUMA)
			}
		})
	}
}

func TestAdmits(t *testing.T) {
	wide, one := Hint{NUMA: NewMask(0, 1), Preferred: true}, Hint{NUMA: NewMask(0), Preferred: true}
	for _, tc := range []struct {
		policy string
		h      Hint
		want   bool
	}{
		{PolicyNone, Hint{}, true}, {PolicyBestEffort, Hint{NUMA: 3}, true},
		{PolicyRestricted, Hint{NUMA: 1}, false}, {PolicyRestricted, wide, true},
		{PolicySingleNUMANode, wide, false}, {PolicySingleNUMANode, one, true},
	} {
		if got := Admits(tc.policy, tc.h); got != tc.want {
			t.Errorf("%s %+v: %v, want %v", tc.policy, tc.h, got, tc.want)
		}
	}
}

// fake offers CPUs on node 0 only: a container asking for more than
// free cannot be placed.
type fake struct {
	free     int
	given    map[string]Mask
	done     []bool
	failWith error
}

func (f *fake) Admission(*v1.Pod, []*v1.Pod) Admission { return f }
func (f *fake) need(c *v1.Container) int {
	q := c.Resources.Requests[v1.ResourceCPU]
	return int(q.Value())
}
func (f *fake) hints(n int) map[string][]Hint {
	if n == 0 {
		return nil
	}
	if n > f.free {
		return map[string][]Hint{"cpu": {}}
	}
	return map[string][]Hint{"cpu": {{NewMask(0), true}}}
}
func (f *fake) ContainerHints(c *v1.Container) map[string][]Hint { return f.hints(f.need(c)) }
func (f *fake) PodHints() map[string][]Hint                      { return f.hints(1) }
func (f *fake) Allocate(c *v1.Container, m Mask) error {
	if f.failWith != nil {
		return f.failWith
	}
	f.given[c.Name] = m
	return nil
}
func (f *fake) Done(ok bool) error { f.done = append(f.done, ok); return nil }

type smt struct{}

func (smt) Error() string {
	return "SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2"
}
func (smt) Reason() string { return "SMTAlignmentError" }

func TestManagerAdmit(t *testing.T) {
	cpu := func(name, n string) v1.Container {
		c := v1.Container{Name: name}
		if n != "" {
			c.Resources.Requests = v1.ResourceList{v1.ResourceCPU: mustQuantity(n)}
		}
		return c
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{cpu("init", "")}, Containers: []v1.Container{cpu("big", "2")}}}
	for _, tc := range []struct {
		policy, scope string
		free          int
		fail          error
		want          podworkers.AdmitResult
		affinity      Mask
	}{
		{policy: PolicyNone, scope: ScopeContainer, free: 0, want: podworkers.AdmitResult{Admit: true}},
		{policy: PolicyBestEffort, scope: ScopeContainer, free: 0, want: podworkers.AdmitResult{Admit: true}, affinity: NewMask(0)},
		{policy: PolicyRestricted, scope: ScopeContainer, free: 2, want: podworkers.AdmitResult{Admit: true}, affinity: NewMask(0)},
		{policy: PolicyRestricted, scope: ScopeContainer, free: 1, want: podworkers.AdmitResult{Reason: ReasonTopologyAffinity, Message: MessageTopologyAffinity}},
		{policy: PolicySingleNUMANode, scope: ScopePod, free: 1, want: podworkers.AdmitResult{Admit: true}, affinity: NewMask(0)},
		{policy: PolicySingleNUMANode, scope: ScopePod, free: 0, want: podworkers.AdmitResult{Reason: ReasonTopologyAffinity, Message: MessageTopologyAffinity}},
		{policy: PolicyNone, scope: ScopeContainer, fail: errors.New("not enough cpus"),
			want: podworkers.AdmitResult{Reason: "UnexpectedAdmissionError", Message: "Allocate failed due to not enough cpus, which is unexpected"}},
		{policy: PolicyNone, scope: ScopeContainer, fail: smt{},
			want: podworkers.AdmitResult{Reason: "SMTAlignmentError", Message: smt{}.Error()}},
	} {
		t.Run(tc.policy+"/"+tc.scope, func(t *testing.T) {
			f := &fake{free: tc.free, given: map[string]Mask{}, failWith: tc.fail}
			m, err := New(Config{Policy: tc.policy, Scope: tc.scope, Nodes: NewMask(0), Providers: []Provider{f}})
			if err != nil {
				t.Fatal(err)
			}
			got := m.Admit(podworkers.AdmitAttributes{Pod: pod})
			if got != tc.want {
				t.Fatalf("Admit = %+v, want %+v", got, tc.want)
			}
			if len(f.done) != 1 || f.done[0] != got.Admit {
				t.Fatalf("Done calls %v, want one with %v", f.done, got.Admit)
			}
			if got.Admit && f.given["big"] != tc.affinity {
				t.Fatalf("big allocated within %s, want %s", f.given["big"], tc.affinity)
			}
		})
	}
	if _, err := New(Config{Policy: "numa-everywhere", Scope: ScopeContainer}); err == nil {
		t.Fatal("unknown policy accepted")
	}
	if _, err := New(Config{Policy: PolicyNone, Scope: "node"}); err == nil {
		t.Fatal("unknown scope accepted")
	}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

func TestParseOptions(t *testing.T) {
	o, err := ParseOptions(nil)
	if err != nil || o.MaxNUMANodes != 8 {
		t.Fatalf("defaults %+v, %v", o, err)
	}
	if o, err := ParseOptions(map[string]string{"max-allowable-numa-nodes": "16"}); err != nil || o.MaxNUMANodes != 16 {
		t.Fatalf("16: %+v, %v", o, err)
	}
	for opt, v := range map[string]string{"max-allowable-numa-nodes": "4", "prefer-closest-numa-nodes": "true", "bogus": "1"} {
		if _, err := ParseOptions(map[string]string{opt: v}); err == nil {
			t.Errorf("%s=%s accepted", opt, v)
		}
	}
	if _, err := New(Config{Policy: PolicyRestricted, Scope: ScopePod, Nodes: Mask(1<<9 - 1)}); err == nil {
		t.Error("9 NUMA nodes accepted with the default max-allowable-numa-nodes")
	}
	if _, err := New(Config{Policy: PolicyRestricted, Scope: ScopePod, Nodes: Mask(1<<9 - 1), Options: Options{MaxNUMANodes: 16}}); err != nil {
		t.Error(err)
	}
}
