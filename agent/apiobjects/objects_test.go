package apiobjects

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
)

// kubeRootCA is the projected volume's part of the kube-api-access volume
// the ServiceAccount admission plugin adds that references an object.
func kubeRootCA() v1.Volume {
	return v1.Volume{Name: "kube-api-access-abcde", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		}}}}
}

func TestPodReferences(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: v1.PodSpec{
		ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}},
		Volumes: []v1.Volume{kubeRootCA(),
			{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec"}}}},
		InitContainers: []v1.Container{{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "envcm"}}}}}},
		Containers: []v1.Container{{Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{
			SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "k"}}}}}},
	}}
	want := []ObjectRef{{KindConfigMap, "ns", "envcm"}, {KindConfigMap, "ns", "kube-root-ca.crt"},
		{KindSecret, "ns", "pull"}, {KindSecret, "ns", "sec"}}
	if got := PodReferences(pod); !slices.Equal(got, want) {
		t.Errorf("PodReferences = %v, want %v", got, want)
	}
}

func TestObjectManagerWatches(t *testing.T) {
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Data: map[string]string{"k": "1"}}
	client := fake.NewClientset(cm)
	changed := make(chan struct{}, 10)
	m := NewObjectManager(clientsettest.FromClientset(client), "", func() { changed <- struct{}{} })
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", UID: "u"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "c"}}}},
		{Name: "w", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}}}},
	}}}
	m.RegisterPod(pod)
	defer m.UnregisterPod(pod.UID)
	ctx := context.Background()
	got, err := m.ConfigMap(ctx, "ns", "c")
	if err != nil || got.Data["k"] != "1" {
		t.Fatalf("ConfigMap = %v, %v", got, err)
	}
	if _, err := m.ConfigMap(ctx, "ns", "missing"); !apierrors.IsNotFound(err) || err.Error() != `configmap "missing" not found` {
		t.Errorf("missing: %v", err)
	}
	cm2 := cm.DeepCopy()
	cm2.Data["k"] = "2"
	if _, err := client.CoreV1().ConfigMaps("ns").Update(ctx, cm2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	for {
		if got, _ := m.ConfigMap(ctx, "ns", "c"); got != nil && got.Data["k"] == "2" {
			break
		}
		select {
		case <-deadline:
			t.Fatal("update not seen")
		case <-changed:
		case <-time.After(10 * time.Millisecond):
		}
	}
	m.UnregisterPod(pod.UID)
	m.mu.Lock()
	n := len(m.watches)
	m.mu.Unlock()
	if n != 0 {
		t.Errorf("%d watches left after the last pod went", n)
	}
}

func TestObjectManagerGetAndCache(t *testing.T) {
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Data: map[string]string{"k": "1"}}
	ctx := context.Background()
	for _, s := range []Strategy{StrategyGet, StrategyCache} {
		client := fake.NewClientset(cm.DeepCopy())
		m := NewObjectManager(clientsettest.FromClientset(client), s, nil)
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", UID: "u"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
			{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "c"}}}}}}}
		m.RegisterPod(pod)
		if got, err := m.ConfigMap(ctx, "ns", "c"); err != nil || got.Data["k"] != "1" {
			t.Fatalf("%s: %v, %v", s, got, err)
		}
		upd := cm.DeepCopy()
		upd.Data["k"] = "2"
		if _, err := client.CoreV1().ConfigMaps("ns").Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		want := map[Strategy]string{StrategyGet: "2", StrategyCache: "1"}[s]
		if got, _ := m.ConfigMap(ctx, "ns", "c"); got.Data["k"] != want {
			t.Errorf("%s: after an update k = %s, want %s", s, got.Data["k"], want)
		}
		if len(m.watches) != 0 {
			t.Errorf("%s: %d watches", s, len(m.watches))
		}
		if _, err := m.ConfigMap(ctx, "ns", "ghost"); !apierrors.IsNotFound(err) {
			t.Errorf("%s: missing: %v", s, err)
		}
	}
}
