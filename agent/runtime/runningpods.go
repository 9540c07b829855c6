package runtime

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RunningPodList is the kubelet API's /runningpods/ of the pods the
// runtime holds (ListPods): the pods with a running container, by the
// runtime's labels, with their running containers' names and images.
func RunningPodList(pods []*PodStatus) *v1.PodList {
	list := &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, ps := range pods {
		pod := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ps.Name, Namespace: ps.Namespace, UID: ps.UID}}
		for _, c := range ps.Containers {
			if c.State == ContainerRunning {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: c.Name, Image: c.Image})
			}
		}
		if len(pod.Spec.Containers) > 0 {
			list.Items = append(list.Items, pod)
		}
	}
	return list
}
