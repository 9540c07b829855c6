package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/images"
)

// TestAPIServerSmoke proves the real control plane test environment works:
// a node credential registers its own Ready Node (as a kubelet does) and
// reads it back, and the Node authorizer with NodeRestriction stops it from
// registering another node; kube-controller-manager has given namespace
// default its ServiceAccount and kube-root-ca.crt ConfigMap; a pod created
// without a node gets the kube-api-access projected volume (ServiceAccount
// admission) and kube-scheduler binds it to the Ready Node.
func TestAPIServerSmoke(t *testing.T) {
	srv := apiserver.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	nodeName := env.RunID()
	admin, err := srv.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	nodeClient, err := srv.NodeClient(nodeName)
	if err != nil {
		t.Fatal(err)
	}

	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: nodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": nodeName,
				"kernelet.dev/test":      "apiserver-smoke",
			},
		},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("1Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			Conditions: []corev1.NodeCondition{{
				Type:               corev1.NodeReady,
				Status:             corev1.ConditionTrue,
				Reason:             "KubeletReady",
				Message:            "fake node of TestAPIServerSmoke",
				LastHeartbeatTime:  metav1.Now(),
				LastTransitionTime: metav1.Now(),
			}},
		},
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := admin.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete node %s: %v", nodeName, err)
		}
	})
	if _, err := nodeClient.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{}); err != nil {
		t.Fatalf("node credential creating its own Node: %v", err)
	}

	got, err := nodeClient.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read back Node %s: %v", nodeName, err)
	}
	if got.Name != nodeName {
		t.Errorf("name = %q, want %q", got.Name, nodeName)
	}
	for k, v := range want.Labels {
		if got.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
		}
	}
	for res, q := range want.Status.Capacity {
		if g, ok := got.Status.Capacity[res]; !ok || g.Cmp(q) != 0 {
			t.Errorf("capacity %s = %v (present %v), want %v", res, g.String(), ok, q.String())
		}
	}

	// The same credential must not register someone else's node.
	other := want.DeepCopy()
	other.Name = nodeName + "-other"
	other.Labels["kubernetes.io/hostname"] = other.Name
	_, err = nodeClient.CoreV1().Nodes().Create(ctx, other, metav1.CreateOptions{})
	switch {
	case err == nil:
		_ = admin.CoreV1().Nodes().Delete(ctx, other.Name, metav1.DeleteOptions{})
		t.Errorf("node credential system:node:%s created Node %s: Node authorizer/NodeRestriction inactive", nodeName, other.Name)
	case !apierrors.IsForbidden(err):
		t.Errorf("creating Node %s as system:node:%s: got %v, want Forbidden", other.Name, nodeName, err)
	default:
		t.Logf("creating Node %s as system:node:%s refused as expected: %v", other.Name, nodeName, err)
	}

	// kube-controller-manager: Start waited for these, so they are there.
	if _, err := admin.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("ServiceAccount default/default: %v", err)
	}
	rootCA, err := admin.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, apiserver.RootCAConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Errorf("ConfigMap default/%s: %v", apiserver.RootCAConfigMap, err)
	} else if rootCA.Data["ca.crt"] == "" {
		t.Errorf("ConfigMap default/%s has no ca.crt", apiserver.RootCAConfigMap)
	}

	// ServiceAccount admission and kube-scheduler: a pod without a node.
	podName := env.RunID() + "-smoke-sched"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			// Only the fake node: other tests may register Ready nodes too.
			NodeSelector: map[string]string{"kubernetes.io/hostname": nodeName},
			Containers:   []corev1.Container{{Name: "c", Image: images.PauseImage}},
		},
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// No kubelet confirms the deletion: grace 0 removes it at once.
		err := admin.CoreV1().Pods(pod.Namespace).Delete(ctx, podName, *metav1.NewDeleteOptions(0))
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete pod %s: %v", podName, err)
		}
	})
	created, err := admin.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod without a node: %v", err)
	}
	apiVolume := kubeAPIAccessVolume(t, created)

	scheduleStart := time.Now()
	var bound *corev1.Pod
	for bound == nil {
		p, err := admin.CoreV1().Pods(pod.Namespace).Get(ctx, podName, metav1.GetOptions{})
		switch {
		case err != nil:
			t.Fatalf("read back pod %s: %v", podName, err)
		case p.Spec.NodeName != "":
			bound = p
			continue
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s not scheduled to Node %s: %v (conditions %+v)", podName, nodeName, ctx.Err(), p.Status.Conditions)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if bound.Spec.NodeName != nodeName {
		t.Errorf("pod %s scheduled to %q, want the Ready fake Node %q", podName, bound.Spec.NodeName, nodeName)
	}
	scheduled := time.Since(scheduleStart)

	t.Logf("apiserver smoke: Node %s created and read back from kube-apiserver %s; default has ServiceAccount default and %s; pod %s got volume %s and was scheduled to %s in %v",
		nodeName, srv.Version(), apiserver.RootCAConfigMap, podName, apiVolume, bound.Spec.NodeName, scheduled.Round(time.Millisecond))
}

// kubeAPIAccessVolume checks that ServiceAccount admission gave pod the
// projected kube-api-access-* volume every API pod has (token, root CA,
// namespace) mounted in its containers, and returns the volume's name.
func kubeAPIAccessVolume(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	if pod.Spec.ServiceAccountName != "default" {
		t.Errorf("serviceAccountName = %q, want default", pod.Spec.ServiceAccountName)
	}
	for _, v := range pod.Spec.Volumes {
		if !strings.HasPrefix(v.Name, "kube-api-access-") {
			continue
		}
		if v.Projected == nil {
			t.Fatalf("volume %s is not projected: %+v", v.Name, v.VolumeSource)
		}
		var token, ca, ns bool
		for _, src := range v.Projected.Sources {
			switch {
			case src.ServiceAccountToken != nil:
				token = src.ServiceAccountToken.Path == "token"
			case src.ConfigMap != nil:
				ca = src.ConfigMap.Name == apiserver.RootCAConfigMap
			case src.DownwardAPI != nil:
				for _, f := range src.DownwardAPI.Items {
					ns = ns || (f.Path == "namespace" && f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.namespace")
				}
			}
		}
		if !token || !ca || !ns {
			t.Errorf("volume %s: token %v, %s %v, namespace %v; want all", v.Name, token, apiserver.RootCAConfigMap, ca, ns)
		}
		for _, c := range pod.Spec.Containers {
			mounted := false
			for _, m := range c.VolumeMounts {
				mounted = mounted || (m.Name == v.Name && m.MountPath == "/var/run/secrets/kubernetes.io/serviceaccount" && m.ReadOnly)
			}
			if !mounted {
				t.Errorf("container %s does not mount %s read-only at /var/run/secrets/kubernetes.io/serviceaccount: %+v", c.Name, v.Name, c.VolumeMounts)
			}
		}
		return v.Name
	}
	t.Fatalf("pod %s has no kube-api-access-* volume (ServiceAccount admission off?): %+v", pod.Name, pod.Spec.Volumes)
	return ""
}
