package pods

import (
	"maps"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/internal/podutil"
)

// IsMirrorOf reports whether mirror is the mirror of the static pod: its
// config.mirror annotation is the static pod's config.hash.
func IsMirrorOf(mirror, static *v1.Pod) bool {
	h, ok := mirror.Annotations[podutil.AnnotationConfigMirror]
	return ok && h == staticHash(static)
}

func staticHash(static *v1.Pod) string {
	if h := static.Annotations[podutil.AnnotationConfigHash]; h != "" {
		return h
	}
	return string(static.UID)
}

// MirrorPod is the mirror of the static pod on node nodeName (whose Node
// has UID nodeUID): the static pod's name, namespace, labels, annotations
// and spec, annotated with config.mirror, owned by the Node.
func MirrorPod(static *v1.Pod, nodeName string, nodeUID types.UID) *v1.Pod {
	m := &v1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        static.Name,
			Namespace:   static.Namespace,
			Labels:      maps.Clone(static.Labels),
			Annotations: maps.Clone(static.Annotations),
		},
		Spec: *static.Spec.DeepCopy(),
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[podutil.AnnotationConfigMirror] = staticHash(static)
	m.Spec.NodeName = nodeName
	if nodeUID != "" {
		ctrl := true
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID, Controller: &ctrl}}
	}
	return m
}

// MirrorPlan is what MirrorActions decides.
type MirrorPlan struct {
	// Create are the static pods whose mirror pod must be created.
	Create []*v1.Pod
	// Delete are the API server's pods to delete (grace 0, UID
	// precondition): mirrors of another version of their static pod,
	// mirrors being deleted, mirrors whose static pod is gone.
	Delete []*v1.Pod
	// Conflicts are static pods whose name a regular API pod holds.
	Conflicts []*v1.Pod
}

// MirrorActions compares the static pods the agent runs with the pods the
// API server has for the node (api) and says which mirrors to create and
// which pods to delete, as kubelet does: a mirror that is being deleted
// or that mirrors another version of its static pod is deleted and
// created again on the next round; a mirror whose static pod is gone is
// deleted.
func MirrorActions(statics, api []*v1.Pod) MirrorPlan {
	// Keyed by namespace and name, not podutil.FullName: this runs every
	// status round over every pod of the node, and a key built by
	// concatenation was an allocation per pod per round.
	type key struct{ namespace, name string }
	byName := make(map[key]*v1.Pod, len(api))
	for _, p := range api {
		byName[key{p.Namespace, p.Name}] = p
	}
	var plan MirrorPlan
	wanted := make(map[key]bool, len(statics))
	for _, s := range statics {
		k := key{s.Namespace, s.Name}
		wanted[k] = true
		m, ok := byName[k]
		switch {
		case !ok:
			plan.Create = append(plan.Create, s)
		case !podutil.IsMirror(m):
			plan.Conflicts = append(plan.Conflicts, s)
		case m.DeletionTimestamp != nil || !IsMirrorOf(m, s):
			plan.Delete = append(plan.Delete, m)
		}
	}
	for _, p := range api {
		if podutil.IsMirror(p) && !wanted[key{p.Namespace, p.Name}] {
			plan.Delete = append(plan.Delete, p)
		}
	}
	return plan
}
