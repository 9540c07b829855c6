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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	internalapi "k8s.io/cri-api/pkg/apis"

	kruntime "github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/volume"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
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

// newAPINode is an agent node (not started yet) of the shared API server
// (whose ServiceAccount admission gives every pod its kube-api-access
// volume): its Node exists and it will run with the node's credential.
func newAPINode(t *testing.T) (*apiserver.Server, *agentNode, internalapi.RuntimeService, kubernetes.Interface) {
	t.Helper()
	srv := apiserver.Shared(t)
	cd := containerd.Shared(t)
	n, rs, _ := newAgentWithCleanup(t, cd)
	volumeCleanup(t, n)
	admin, err := srv.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	o := apiObjects{t: t, admin: admin}
	killRuntimePods(t, n, cd)
	nodes := admin.CoreV1().Nodes()
	if _, err := nodes.Create(t.Context(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("node", func(ctx context.Context) error { return nodes.Delete(ctx, n.node, metav1.DeleteOptions{}) })
	kubeconfig, err := srv.NodeKubeconfig(n.node)
	if err != nil {
		t.Fatal(err)
	}
	n.kubeconfig = kubeconfig
	return srv, n, rs, admin
}

// killRuntimePods kills, at the end of the test (after the agent), every
// runtime pod of the agent's cgroup root: API pods have no node suffix in
// their names, so agentCleanup does not see them.
func killRuntimePods(t *testing.T, n *agentNode, cd *containerd.Instance) {
	rs, is := criClients(t, cd)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		h, err := cgroups.Discover()
		if err != nil {
			t.Error(err)
			return
		}
		cm, err := cgroups.NewManager(h, cgroups.ManagerConfig{CgroupRoot: n.cgroupRoot})
		if err != nil {
			t.Error(err)
			return
		}
		m, err := kruntime.NewManager(kruntime.ManagerConfig{Runtime: rs, Images: is, Cgroups: kruntime.CgroupsAdapter{Manager: cm},
			PodLogsDir: n.logs, PodsDir: filepath.Join(n.root, "pods")})
		if err != nil {
			t.Error(err)
			return
		}
		listed, err := m.ListPods(ctx)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		zero := int64(0)
		for _, p := range listed {
			if _, err := os.Stat(filepath.Join(n.root, "pods", string(p.UID))); err != nil {
				continue // not a pod of this agent
			}
			st, err := m.GetPodStatus(ctx, p.UID, p.Name, p.Namespace)
			if err != nil {
				st = p
			}
			if err := m.KillPod(ctx, nil, st, &zero).Err(); err != nil {
				t.Errorf("cleanup: kill %s: %v", p.Name, err)
			}
		}
	})
}

// createPod creates pod and deletes it (grace 0) at the end of the test.
func (o apiObjects) createPod(pod *v1.Pod) *v1.Pod {
	o.t.Helper()
	pods := o.admin.CoreV1().Pods(pod.Namespace)
	got, err := pods.Create(o.t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		o.t.Fatal(err)
	}
	o.cleanup("pod "+pod.Name, func(ctx context.Context) error {
		zero := int64(0)
		return pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	return got
}

// Pods from the API server get their data volumes: the kube-api-access
// projected volume the ServiceAccount admission plugin injects (a bound token that authenticates to the API server
// from inside the pod, the cluster CA, the namespace), configMap and
// secret volumes; a configMap edit shows in the pod without a restart; the
// volumes go with the pod.
func TestAgentVolumesAPI(t *testing.T) {
	srv, n, rs, admin := newAPINode(t)
	ctx := t.Context()
	o := apiObjects{t: t, admin: admin}
	const ns = "default"
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
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-data", Namespace: ns, Labels: map[string]string{"stage": "one"}}, Spec: v1.PodSpec{
		NodeName: n.node, HostNetwork: true, TerminationGracePeriodSeconds: &grace, ServiceAccountName: "default",
		Containers: []v1.Container{{Name: "app", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent,
			Command: []string{"/bin/sh", "-c", "exec sleep 3600"},
			VolumeMounts: []v1.VolumeMount{
				{Name: "cfg", MountPath: "/etc/cfg"},
				{Name: "sec", MountPath: "/etc/sec", ReadOnly: true},
				{Name: "podinfo", MountPath: "/etc/podinfo"},
			}}},
		Volumes: []v1.Volume{
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm.Name}}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: sec.Name, DefaultMode: &secretMode}}},
			{Name: "podinfo", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
		}}}
	pod = o.createPod(pod)
	apiAccess := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil {
			apiAccess = v.Name
		}
	}
	if apiAccess == "" {
		t.Fatalf("the API server gave the pod no kube-api-access volume: %+v", pod.Spec.Volumes)
	}
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
	for _, d := range []string{filepath.Join(vols, volume.PluginSecret, "sec"), filepath.Join(vols, volume.PluginProjected, apiAccess)} {
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

	// A label change reaches the downwardAPI volume.
	waitExec(t, rs, pod, "cat /etc/podinfo/labels", `stage="one"`, 5*time.Second)
	patch := []byte(`{"metadata":{"labels":{"stage":"two"}}}`)
	if _, err := pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	took = waitExec(t, rs, pod, "cat /etc/podinfo/labels", `stage="two"`, 30*time.Second)
	t.Logf("label change seen in the downwardAPI volume after %v", took.Round(time.Millisecond))

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

// apiPod is a host-network pod of the testbox image bound to node.
func apiPod(name, node string, c v1.Container) *v1.Pod {
	grace := int64(2)
	c.Image, c.ImagePullPolicy = images.TestboxImage, v1.PullIfNotPresent
	if c.Command == nil {
		c.Command = []string{"/bin/sh", "-c", "exec sleep 3600"}
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "env"}},
		Spec: v1.PodSpec{NodeName: node, HostNetwork: true, TerminationGracePeriodSeconds: &grace, Containers: []v1.Container{c}}}
}

// waitWaiting waits until the agent reports container app of pod waiting
// with reason and returns the message.
func waitWaiting(t *testing.T, n *agentNode, pod, reason string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		if l, err := n.pods(t.Context()); err == nil {
			for _, p := range l.Items {
				if p.Name != pod {
					continue
				}
				for _, cs := range p.Status.ContainerStatuses {
					if w := cs.State.Waiting; w != nil {
						if w.Reason == reason {
							return w.Message
						}
						last = w.Reason + ": " + w.Message
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s not waiting with %s after %v (last %q)\nkernelet log:\n%s", pod, reason, timeout, last, n.log(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Env from the API: configMapKeyRef, secretKeyRef, envFrom with a prefix,
// fieldRef labels; a missing configMap leaves the container waiting with
// CreateContainerConfigError naming it, and creating it lets the pod run;
// a missing configMap volume gives FailedMount events until it exists.
func TestAgentEnvAPI(t *testing.T) {
	_, n, rs, admin := newAPINode(t)
	ctx := t.Context()
	o := apiObjects{t: t, admin: admin}
	prefix := strings.ToLower(env.RunID())
	cms, secrets := admin.CoreV1().ConfigMaps("default"), admin.CoreV1().Secrets("default")
	cm, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-env"},
		Data: map[string]string{"color": "blue", "size": "xl"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.cleanup("configmap", func(ctx context.Context) error { return cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}) })
	sec, err := secrets.Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-env"},
		Data: map[string][]byte{"token": []byte("t0k3n")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.cleanup("secret", func(ctx context.Context) error { return secrets.Delete(ctx, sec.Name, metav1.DeleteOptions{}) })
	ref := func(name string) v1.LocalObjectReference { return v1.LocalObjectReference{Name: name} }

	good := o.createPod(apiPod(prefix+"-env", n.node, v1.Container{Name: "app",
		EnvFrom: []v1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: ref(cm.Name)}}},
		Env: []v1.EnvVar{
			{Name: "COLOR", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: ref(cm.Name), Key: "color"}}},
			{Name: "TOKEN", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: ref(sec.Name), Key: "token"}}},
			{Name: "APP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "MIX", Value: "$(COLOR)-$(CFG_size)"},
		}}))
	mountLater := apiPod(prefix+"-mount", n.node, v1.Container{Name: "app",
		VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}})
	mountLater.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: ref(prefix + "-mount")}}}}
	mountLater = o.createPod(mountLater)
	late := o.createPod(apiPod(prefix+"-late", n.node, v1.Container{Name: "app",
		Env: []v1.EnvVar{{Name: "LATE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: ref(prefix + "-late"), Key: "k"}}}}}))
	n.start(t)
	n.waitRunning(t, 90*time.Second, good.Name)
	out, err := execIn(t, rs, good, "env")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CFG_color=blue", "CFG_size=xl", "COLOR=blue", "TOKEN=t0k3n", "APP=env", "MIX=blue-xl"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("env of the pod lacks %s:\n%s", want, out)
		}
	}

	msg := waitWaiting(t, n, late.Name, "CreateContainerConfigError", 60*time.Second)
	if !strings.Contains(msg, `configmap "`+prefix+`-late" not found`) {
		t.Errorf("CreateContainerConfigError message = %q, want the configMap named", msg)
	}
	if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-late"}, Data: map[string]string{"k": "here"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("configmap late", func(ctx context.Context) error { return cms.Delete(ctx, prefix+"-late", metav1.DeleteOptions{}) })
	start := time.Now()
	n.waitRunning(t, 60*time.Second, late.Name)
	t.Logf("pod ran %v after its configMap was created", time.Since(start).Round(time.Millisecond))
	if out, err := execIn(t, rs, late, "echo $LATE"); err != nil || out != "here\n" {
		t.Errorf("LATE = %q, %v", out, err)
	}

	// A missing configMap volume: FailedMount naming it, retried until it
	// exists.
	wantMsg := `MountVolume.SetUp failed for volume "cfg" : configmap "` + prefix + `-mount" not found`
	deadline := time.Now().Add(60 * time.Second)
	for {
		evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + mountLater.Name})
		found := ""
		if err == nil {
			for _, e := range evs.Items {
				if e.Reason == "FailedMount" {
					found = e.Message
				}
			}
		}
		if found == wantMsg {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no FailedMount event %q (last %q, %v)", wantMsg, found, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-mount"}, Data: map[string]string{"f": "mounted"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("configmap mount", func(ctx context.Context) error { return cms.Delete(ctx, prefix+"-mount", metav1.DeleteOptions{}) })
	start = time.Now()
	n.waitRunning(t, 60*time.Second, mountLater.Name)
	t.Logf("pod ran %v after its volume's configMap was created", time.Since(start).Round(time.Millisecond))
	if out, err := execIn(t, rs, mountLater, "cat /cfg/f"); err != nil || out != "mounted" {
		t.Errorf("/cfg/f = %q, %v", out, err)
	}
}
