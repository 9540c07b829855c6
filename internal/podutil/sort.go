package podutil

import (
	"cmp"

	v1 "k8s.io/api/core/v1"
)

// RefOf is pod's Ref.
func RefOf(pod *v1.Pod) Ref {
	return Ref{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
}

// Compare orders pods as the agent lists them: by namespace, then name,
// then UID. It returns -1, 0 or +1 like cmp.Compare, for slices.SortFunc.
func Compare(a, b Ref) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
}
