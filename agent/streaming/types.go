package streaming

import (
	"time"

	v1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
)

// Pods finds a pod the agent runs by namespace and name.
type Pods interface {
	PodByName(namespace, name string) (*v1.Pod, v1.PodStatus, bool)
}

// Server serves the streaming endpoints.
type Server struct {
	Pods Pods
	// Runtime returns the CRI runtime service, nil until connected.
	Runtime func() internalapi.RuntimeService
	// IdleTimeout ends a translated WebSocket exec or attach session after
	// that long without traffic (streamingConnectionIdleTimeout); 0 means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// Options are the streams of an exec or attach request.
type Options struct {
	Stdin, Stdout, Stderr, TTY bool
}

// Target is the pod (and container) a request names.
type Target struct {
	Namespace, Pod, UID, Container string
}
