package gc

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/podworkers"
)

type fakeWorkers []podworkers.PodRecord

func (w fakeWorkers) Pods() []podworkers.PodRecord { return w }

type fakeSources struct {
	seenAll bool
	pods    []*v1.Pod
}

func (s fakeSources) SeenAllSources() bool { return s.seenAll }
func (s fakeSources) UIDs() map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, p := range s.pods {
		out[p.UID] = true
	}
	return out
}

func TestPodStatesOf(t *testing.T) {
	pod := func(uid string) *v1.Pod { return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}} }
	rec := func(uid string, ph v1.PodPhase, terminating, finished bool) podworkers.PodRecord {
		return podworkers.PodRecord{Pod: pod(uid), Status: v1.PodStatus{Phase: ph}, Terminating: terminating, Finished: finished}
	}
	workers := fakeWorkers{
		rec("running", v1.PodRunning, false, false),
		rec("stopping", v1.PodRunning, true, false),
		rec("failed-stopping", v1.PodFailed, true, false),
		rec("succeeded", v1.PodSucceeded, false, true),
	}
	for name, tc := range map[string]struct {
		uid     string
		seenAll bool
		want    PodState
	}{
		"worker runs it":                       {"running", true, PodActive},
		"terminating, not terminal":            {"stopping", true, PodActive},
		"terminating in a terminal phase":      {"failed-stopping", true, PodFinished},
		"finished":                             {"succeeded", false, PodFinished},
		"only a source wants it":               {"wanted", true, PodActive},
		"unknown before every source was seen": {"gone", false, PodActive},
		"unknown":                              {"gone", true, PodRemoved},
	} {
		t.Run(name, func(t *testing.T) {
			s := PodStates{Workers: workers, Sources: fakeSources{seenAll: tc.seenAll, pods: []*v1.Pod{pod("wanted")}}}
			if got := s.Of(types.UID(tc.uid)); got != tc.want {
				t.Errorf("Of(%s) = %s, want %s", tc.uid, got, tc.want)
			}
		})
	}
}

func TestSpecImages(t *testing.T) {
	pods := []*v1.Pod{
		{Spec: v1.PodSpec{InitContainers: []v1.Container{{Image: "init"}}, Containers: []v1.Container{{Image: "a"}, {Image: "b"}}}},
		{Spec: v1.PodSpec{Containers: []v1.Container{{Image: "c"}}}},
	}
	if got, want := SpecImages(pods), []string{"init", "a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("SpecImages = %v, want %v", got, want)
	}
}
