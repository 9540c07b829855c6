package events

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/internal/clientset"
)

// Component is the source component of the agent's events: kubelet's, so
// that tools filtering on it find kernelet's events.
const Component = "kubelet"

// Recorder records events; Shutdown flushes and stops it.
type Recorder struct {
	record.EventRecorderLogger
	broadcaster record.EventBroadcaster
}

// New returns a recorder of events on node nodeName, written through
// client (nil: logged only), until Shutdown.
func New(ctx context.Context, client clientset.Interface, nodeName string) *Recorder {
	b := record.NewBroadcaster(record.WithContext(ctx))
	log := klog.FromContext(ctx)
	b.StartEventWatcher(func(e *v1.Event) {
		log.V(2).Info("Event", "object", klog.KRef(e.InvolvedObject.Namespace, e.InvolvedObject.Name),
			"kind", e.InvolvedObject.Kind, "fieldPath", e.InvolvedObject.FieldPath,
			"type", e.Type, "reason", e.Reason, "message", e.Message)
	})
	if client != nil {
		b.StartRecordingToSink(sink{client})
	}
	r := b.NewRecorder(clientset.Scheme, v1.EventSource{Component: Component, Host: nodeName})
	return &Recorder{EventRecorderLogger: r, broadcaster: b}
}

// Shutdown stops the recorder; events recorded afterwards are dropped.
func (r *Recorder) Shutdown() { r.broadcaster.Shutdown() }

// NodeRef is the object reference of node events: kind Node, the node's
// name as name and UID, as kubelet refers to its node.
func NodeRef(nodeName string) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: nodeName, UID: types.UID(nodeName)}
}

// PodRef is the object reference of events on pod, or on one of its
// containers when container is not empty (fieldPath
// spec.containers{name}, spec.initContainers{name}).
func PodRef(pod *v1.Pod, container string) *v1.ObjectReference {
	ref := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
		UID: pod.UID, ResourceVersion: pod.ResourceVersion}
	if container == "" {
		return ref
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == container {
			ref.FieldPath = "spec.initContainers{" + container + "}"
			return ref
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == container {
			ref.FieldPath = "spec.ephemeralContainers{" + container + "}"
			return ref
		}
	}
	ref.FieldPath = "spec.containers{" + container + "}"
	return ref
}

// sink writes the broadcaster's events through the core/v1 events API,
// each in its own namespace.
type sink struct{ client clientset.Interface }

func (s sink) Create(e *v1.Event) (*v1.Event, error) {
	return s.client.Events(e.Namespace).Create(context.Background(), e, metav1.CreateOptions{})
}

func (s sink) Update(e *v1.Event) (*v1.Event, error) {
	return s.client.Events(e.Namespace).Update(context.Background(), e, metav1.UpdateOptions{})
}

func (s sink) Patch(e *v1.Event, data []byte) (*v1.Event, error) {
	return s.client.Events(e.Namespace).Patch(context.Background(), e.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
