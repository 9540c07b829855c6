package runtime

import "testing"

func TestSameState(t *testing.T) {
	base := func() *PodStatus {
		return &PodStatus{
			Sandboxes:  []*SandboxStatus{{ID: "s1", Ready: true}},
			Containers: []*ContainerStatus{{ID: "c1", State: ContainerRunning}, {ID: "c0", State: ContainerExited, ExitCode: 1}},
		}
	}
	if !SameState(base(), base()) {
		t.Error("equal statuses differ")
	}
	// A relist's view carries no exit details and may list in another
	// order: still the same state.
	listed := base()
	listed.Containers[0], listed.Containers[1] = listed.Containers[1], listed.Containers[0]
	listed.Containers[0].ExitCode = 0
	if !SameState(base(), listed) {
		t.Error("the same objects in the same states, listed in another order, differ")
	}
	for name, change := range map[string]func(*PodStatus){
		"sandbox not ready":  func(p *PodStatus) { p.Sandboxes[0].Ready = false },
		"another sandbox":    func(p *PodStatus) { p.Sandboxes[0].ID = "s2" },
		"a new sandbox":      func(p *PodStatus) { p.Sandboxes = append(p.Sandboxes, &SandboxStatus{ID: "s2"}) },
		"container exited":   func(p *PodStatus) { p.Containers[0].State = ContainerExited },
		"a new container":    func(p *PodStatus) { p.Containers = append(p.Containers, &ContainerStatus{ID: "c2"}) },
		"container replaced": func(p *PodStatus) { p.Containers[0].ID = "c2" },
		"container removed":  func(p *PodStatus) { p.Containers = p.Containers[:1] },
		"nothing left":       func(p *PodStatus) { p.Sandboxes, p.Containers = nil, nil },
	} {
		changed := base()
		change(changed)
		if SameState(base(), changed) || SameState(changed, base()) {
			t.Errorf("%s: same state", name)
		}
	}
}

func TestActed(t *testing.T) {
	r := newResult()
	if r.Acted() {
		t.Error("no step: acted")
	}
	r.step(ActionSetUpVolumes, "uid", nil, "")
	if r.Acted() {
		t.Error("volume set-up alone (every sync): acted")
	}
	r.step(ActionStartContainer, "app", nil, "")
	if !r.Acted() {
		t.Error("a container started: not acted")
	}
}
