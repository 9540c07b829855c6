package logs

import (
	"time"

	v1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
)

// Pods finds a pod the agent runs by namespace and name.
type Pods interface {
	// PodByName returns the pod and its last computed status.
	PodByName(namespace, name string) (*v1.Pod, v1.PodStatus, bool)
}

// Source is what the /containerLogs handler reads from.
type Source struct {
	Pods Pods
	// Runtime returns the CRI runtime service, nil until connected.
	Runtime func() internalapi.RuntimeService
	// Now is the clock for sinceSeconds; nil means time.Now.
	Now func() time.Time
}
