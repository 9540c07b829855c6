package gc

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/internal/podutil"
)

// PodStates tells the PodState of a pod from what the pod workers run and
// what the pod sources want; its Of is the agent's PodStateFunc.
type PodStates struct {
	Workers interface{ Pods() []podworkers.PodRecord }
	Sources interface {
		SeenAllSources() bool
		UIDs() map[types.UID]bool
	}
}

// Of is what container GC may do with pod uid's leftovers: a pod that a
// worker runs or a source wants is active (finished once it stopped);
// before every source delivered its pods, every pod counts as active; the
// rest is removed.
func (s PodStates) Of(uid types.UID) PodState {
	for _, r := range s.Workers.Pods() {
		if r.Pod.UID != uid {
			continue
		}
		terminal := podutil.IsTerminal(r.Status.Phase)
		if r.Finished || (r.Terminating && terminal) {
			return PodFinished
		}
		return PodActive
	}
	if !s.Sources.SeenAllSources() {
		return PodActive
	}
	if s.Sources.UIDs()[uid] {
		return PodActive
	}
	return PodRemoved
}

// SpecImages are the images pods name (init and app containers): image
// GC keeps those of the pods the sources want even before their
// containers exist.
func SpecImages(pods []*v1.Pod) []string {
	var out []string
	for _, pod := range pods {
		for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for _, c := range cs {
				out = append(out, c.Image)
			}
		}
	}
	return out
}
