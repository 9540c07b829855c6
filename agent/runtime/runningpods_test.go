package runtime

import "testing"

func TestRunningPodList(t *testing.T) {
	pods := []*PodStatus{
		{UID: "u1", Name: "web", Namespace: "ns", Containers: []*ContainerStatus{
			{Name: "app", Image: "nginx", State: ContainerRunning},
			{Name: "done", Image: "busybox", State: ContainerExited},
		}},
		{UID: "u2", Name: "stopped", Namespace: "ns", Containers: []*ContainerStatus{{Name: "x", State: ContainerExited}}},
	}
	list := RunningPodList(pods)
	if list.Kind != "PodList" || list.APIVersion != "v1" {
		t.Errorf("type meta %+v", list.TypeMeta)
	}
	if len(list.Items) != 1 {
		t.Fatalf("items %d, want only the pod with a running container", len(list.Items))
	}
	p := list.Items[0]
	if p.Name != "web" || p.Namespace != "ns" || p.UID != "u1" {
		t.Errorf("pod %s/%s %s", p.Namespace, p.Name, p.UID)
	}
	if c := p.Spec.Containers; len(c) != 1 || c[0].Name != "app" || c[0].Image != "nginx" {
		t.Errorf("containers %+v, want only app (nginx)", c)
	}
	if RunningPodList(nil).Items != nil {
		t.Error("no pods: items not nil")
	}
}
