package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	internalapi "k8s.io/cri-api/pkg/apis"

	"github.com/kernelet/kernelet/agent/volume"
	"github.com/kernelet/kernelet/test/env"
)

// apiObjects creates API objects and deletes them at the end of the test.
type apiObjects struct {
	t     *testing.T
	admin kubernetes.Interface
}

func (o apiObjects) cleanup(what string, del func(ctx context.Context) error) {
	o.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := del(ctx); err != nil && !apierrors.IsNotFound(err) {
			o.t.Errorf("cleanup: delete %s: %v", what, err)
		}
	})
}

// ensureServiceAccountBasics makes the default ServiceAccount and the
// kube-root-ca.crt configMap of namespace ns exist (what the controllers
// of a cluster make), removing at the end only what it created.
func (o apiObjects) ensureServiceAccountBasics(ctx context.Context, ns, caFile string) {
	o.t.Helper()
	sas := o.admin.CoreV1().ServiceAccounts(ns)
	if _, err := sas.Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err == nil {
		o.cleanup("serviceaccount default", func(ctx context.Context) error { return sas.Delete(ctx, "default", metav1.DeleteOptions{}) })
	} else if !apierrors.IsAlreadyExists(err) {
		o.t.Fatal(err)
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		o.t.Fatal(err)
	}
	cms := o.admin.CoreV1().ConfigMaps(ns)
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": string(ca)}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err == nil {
		o.cleanup("configmap kube-root-ca.crt", func(ctx context.Context) error { return cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}) })
	} else if !apierrors.IsAlreadyExists(err) {
		o.t.Fatal(err)
	}
}

// kubeAPIAccessVolume is the projected volume the ServiceAccount admission
// plugin adds to every pod.
func kubeAPIAccessVolume(name string) v1.Volume {
	exp, mode := int64(3607), int32(0o644)
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "token"}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}}}}
}

// execIn runs sh -c script in the first container of pod uid.
func execIn(t *testing.T, rs internalapi.RuntimeService, pod *v1.Pod, script string) (string, error) {
	t.Helper()
	cs, _ := podObjects(t, rs, pod.UID)
	if len(cs) == 0 {
		t.Fatalf("no container of pod %s", pod.Name)
	}
	stdout, stderr, err := rs.ExecSync(t.Context(), cs[0].Id, []string{"/bin/sh", "-c", script}, 20*time.Second)
	if err != nil {
		return string(stdout) + string(stderr), err
	}
	return string(stdout), nil
}

// waitExec runs script until its output contains want.
func waitExec(t *testing.T, rs internalapi.RuntimeService, pod *v1.Pod, script, want string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		out, err := execIn(t, rs, pod, script)
		if err == nil && strings.Contains(out, want) {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%q in the pod: %q (%v) after %v, want %q", script, out, err, timeout, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Pods from the API server get their data volumes: the kube-api-access
// projected volume (a bound token that authenticates to the API server
// from inside the pod, the cluster CA, the namespace), configMap and
// secret volumes; a configMap edit shows in the pod without a restart; the
// volumes go with the pod.
func TestAgentVolumesAPI(t *testing.T) {
	srv := env.SharedAPIServer(t)
	cd := env.SharedContainerd(t)
	n, rs, _ := newAgentWithCleanup(t, cd)
	volumeCleanup(t, n)
	admin, err := srv.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	o := apiObjects{t: t, admin: admin}
	nodes := admin.CoreV1().Nodes()
	if _, err := nodes.Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("node", func(ctx context.Context) error { return nodes.Delete(ctx, n.node, metav1.DeleteOptions{}) })
	const ns = "default"
	o.ensureServiceAccountBasics(ctx, ns, srv.CAFile())
	prefix := strings.ToLower(env.RunID())
	cms, secrets, pods := admin.CoreV1().ConfigMaps(ns), admin.CoreV1().Secrets(ns), admin.CoreV1().Pods(ns)
	cm, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-cfg"}, Data: map[string]string{"key": "v1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.cleanup("configmap", func(ctx context.Context) error { return cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}) })
	sec, err := secrets.Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-sec"}, Data: map[string][]byte{"pw": []byte("s3cret")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.cleanup("secret", func(ctx context.Context) error { return secrets.Delete(ctx, sec.Name, metav1.DeleteOptions{}) })

	secretMode, grace := int32(0o400), int64(2)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-data"}, Spec: v1.PodSpec{
		NodeName: n.node, HostNetwork: true, TerminationGracePeriodSeconds: &grace, ServiceAccountName: "default",
		Containers: []v1.Container{{Name: "app", Image: env.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent,
			Command: []string{"/bin/sh", "-c", "exec sleep 3600"},
			VolumeMounts: []v1.VolumeMount{
				{Name: "kube-api-access-e2e", MountPath: saDir, ReadOnly: true},
				{Name: "cfg", MountPath: "/etc/cfg"},
				{Name: "sec", MountPath: "/etc/sec", ReadOnly: true},
			}}},
		Volumes: []v1.Volume{
			kubeAPIAccessVolume("kube-api-access-e2e"),
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm.Name}}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: sec.Name, DefaultMode: &secretMode}}},
		}}}
	pod, err = pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.cleanup("pod", func(ctx context.Context) error {
		zero := int64(0)
		return pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	kubeconfig, err := srv.NodeKubeconfig(n.node)
	if err != nil {
		t.Fatal(err)
	}
	n.args = []string{"--kubeconfig", kubeconfig}
	n.start(t)
	n.waitRunning(t, 90*time.Second, pod.Name)

	ca, _ := os.ReadFile(srv.CAFile())
	if out, err := execIn(t, rs, pod, "cat "+saDir+"/ca.crt"); err != nil || out != string(ca) {
		t.Errorf("ca.crt in the pod = %q, %v; want the cluster CA", out, err)
	}
	if out, err := execIn(t, rs, pod, "cat "+saDir+"/namespace"); err != nil || out != ns {
		t.Errorf("namespace in the pod = %q, %v", out, err)
	}
	if out, err := execIn(t, rs, pod, "ls -a "+saDir+" | tr '\\n' ' '"); err != nil || !strings.Contains(out, "..data ca.crt namespace token") {
		t.Errorf("service account dir = %q, %v; want kubelet's atomic writer layout", out, err)
	}
	// The token authenticates from inside the pod as the pod's service
	// account.
	review := `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	out, err := execIn(t, rs, pod, "/testbox fetch --bearer-file "+saDir+"/token --ca-file "+saDir+"/ca.crt --post-data '"+review+"' --url "+
		srv.URL()+"/apis/authentication.k8s.io/v1/selfsubjectreviews")
	if err != nil || !strings.Contains(out, `"username":"system:serviceaccount:default:default"`) {
		t.Errorf("SelfSubjectReview with the pod's token: %q, %v", out, err)
	}
	if out, err := execIn(t, rs, pod, "cat /etc/sec/pw; stat -L -c ' %a' /etc/sec/pw"); err != nil || out != "s3cret 400\n" {
		t.Errorf("secret in the pod = %q, %v; want s3cret with mode 400", out, err)
	}
	vols := filepath.Join(n.root, "pods", string(pod.UID), "volumes")
	mounts := strings.Join(mountsUnder(t, n.root), " ")
	for _, d := range []string{filepath.Join(vols, volume.PluginSecret, "sec"), filepath.Join(vols, volume.PluginProjected, "kube-api-access-e2e")} {
		if !strings.Contains(mounts, d) {
			t.Errorf("%s is not on a tmpfs; mounts: %s", d, mounts)
		}
	}

	// A configMap edit reaches the running pod.
	waitExec(t, rs, pod, "cat /etc/cfg/key", "v1", 5*time.Second)
	cm.Data["key"] = "v2"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	took := waitExec(t, rs, pod, "cat /etc/cfg/key", "v2", 10*time.Second)
	t.Logf("configMap edit seen in the pod after %v", took.Round(time.Millisecond))

	// The pod goes: the agent confirms the deletion and removes the volumes.
	if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod still in the API server after 60s (%v)\nkernelet log:\n%s", err, n.log(t))
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitGone(t, n, vols, 30*time.Second)
}
