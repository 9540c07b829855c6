package agent

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"

	"github.com/kernelet/kernelet/agent/gc"
	"github.com/kernelet/kernelet/internal/podutil"
	"github.com/kernelet/kernelet/status/events"
)

// ErrNoPods: the pod lifecycle does not run (yet), so there is nothing to
// collect.
var ErrNoPods = errors.New("the pod lifecycle is not running")

// newCollectors builds the container and image collectors of p.
func (a *Agent) newCollectors(p *pods, rs internalapi.RuntimeService, is internalapi.ImageManagerService) error {
	kc := &a.opts.Config.Kubelet
	pol := gc.DefaultContainerPolicy()
	if a.opts.ContainerGC != nil {
		pol = *a.opts.ContainerGC
	}
	node := events.NodeRef(a.opts.NodeName)
	var err error
	p.containerGC, err = gc.NewContainerGC(gc.ContainerGCConfig{Runtime: rs, Policy: pol, PodState: p.gcState,
		PodLogsDir: kc.PodLogsDir, Recorder: a.recorder, Node: node})
	if err != nil {
		return err
	}
	p.imageGC, err = gc.NewImageGC(gc.ImageGCConfig{Images: is, Runtime: rs, Recorder: a.recorder, Node: node,
		PodImages: p.specImages, Metrics: a.metrics.imageGC,
		Policy: gc.ImagePolicy{HighThresholdPercent: int(*kc.ImageGCHighThresholdPercent),
			LowThresholdPercent: int(*kc.ImageGCLowThresholdPercent),
			MinAge:              kc.ImageMinimumGCAge.Duration, MaxAge: kc.ImageMaximumGCAge.Duration}})
	return err
}

// gcState is what container GC may do with pod uid's leftovers: a pod
// that a worker runs or a source wants is active (finished once it
// stopped); before every source delivered its pods, every pod counts as
// active; the rest is removed.
func (p *pods) gcState(uid types.UID) gc.PodState {
	for _, r := range p.workers.Pods() {
		if r.Pod.UID != uid {
			continue
		}
		terminal := podutil.IsTerminal(r.Status.Phase)
		if r.Finished || (r.Terminating && terminal) {
			return gc.PodFinished
		}
		return gc.PodActive
	}
	if !p.sources.SeenAllSources() {
		return gc.PodActive
	}
	for _, pod := range p.sources.Pods() {
		if pod.UID == uid {
			return gc.PodActive
		}
	}
	return gc.PodRemoved
}

// specImages are the images the pods the sources want name: image GC
// keeps them even before their containers exist.
func (p *pods) specImages() []string {
	var out []string
	for _, pod := range p.sources.Pods() {
		for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for _, c := range cs {
				out = append(out, c.Image)
			}
		}
	}
	return out
}

// DeleteAllUnusedContainers removes every dead container and sandbox the
// pods do not need (disk pressure reclaim; see gc.ContainerGC).
func (a *Agent) DeleteAllUnusedContainers(ctx context.Context) error {
	p := a.currentPods()
	if p == nil {
		return ErrNoPods
	}
	return p.containerGC.DeleteAllUnusedContainers(ctx)
}

// DeleteUnusedImages removes every image no container uses (disk pressure
// reclaim; see gc.ImageGC).
func (a *Agent) DeleteUnusedImages(ctx context.Context) error {
	p := a.currentPods()
	if p == nil {
		return ErrNoPods
	}
	return p.imageGC.DeleteUnusedImages(ctx)
}

func (a *Agent) currentPods() *pods {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pods
}
