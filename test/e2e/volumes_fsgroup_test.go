package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// fsGroup ownership as kubelet gives it, read back inside a container that
// runs as a non-root user (1000, group 3000) in the fsGroup (2000): the
// configMap, secret, downwardAPI and projected volumes are the group's with
// group read and setgid directories, the emptyDir is group-writable and
// setgid (a file the user makes there is the group's), and the user reads
// a secret it can only read through the group.
func TestAgentVolumesFSGroup(t *testing.T) {
	_, n, rs, admin := newAPINode(t)
	ctx := t.Context()
	o := apiObjects{t: t, admin: admin}
	const ns = "default"
	prefix := strings.ToLower(env.RunID())
	cms, secrets := admin.CoreV1().ConfigMaps(ns), admin.CoreV1().Secrets(ns)
	cm, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-fsg"}, Data: map[string]string{"key": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.cleanup("configmap", func(ctx context.Context) error { return cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}) })
	sec, err := secrets.Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-fsg"}, Data: map[string][]byte{"pw": []byte("s3cret")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.cleanup("secret", func(ctx context.Context) error { return secrets.Delete(ctx, sec.Name, metav1.DeleteOptions{}) })

	user, group, fsGroup := int64(1000), int64(3000), int64(2000)
	policy := v1.FSGroupChangeOnRootMismatch
	secretMode := int32(0o440)
	labels := &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	pod := apiPod(prefix+"-fsgroup", n.node, v1.Container{Name: "app", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent,
		VolumeMounts: []v1.VolumeMount{
			{Name: "cfg", MountPath: "/v/cfg"}, {Name: "sec", MountPath: "/v/sec"}, {Name: "info", MountPath: "/v/info"},
			{Name: "proj", MountPath: "/v/proj"}, {Name: "scratch", MountPath: "/v/scratch"},
		}})
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: &user, RunAsGroup: &group, FSGroup: &fsGroup, FSGroupChangePolicy: &policy}
	pod.Spec.Volumes = []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm.Name}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: sec.Name, DefaultMode: &secretMode}}},
		{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: labels.Items}}},
		{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: cm.Name}}},
			{DownwardAPI: labels}}}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	pod = o.createPod(pod)
	n.start(t)
	n.waitRunning(t, 90*time.Second, pod.Name)

	script := `id -u; id -G
for p in cfg cfg/..data cfg/key sec sec/pw info info/name proj proj/key proj/name scratch; do stat -L -c "$p %g %a" /v/$p; done
echo made > /v/scratch/new && stat -c "scratch/new %g" /v/scratch/new
cat /v/sec/pw`
	out, err := execIn(t, rs, pod, script)
	if err != nil {
		t.Fatalf("in the pod: %v\n%s", err, out)
	}
	t.Logf("inside the pod:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || lines[0] != "1000" || !strings.Contains(" "+lines[1]+" ", " 2000 ") {
		t.Fatalf("the container does not run as 1000 in group 2000: %q", out)
	}
	want := []string{
		"cfg 2000 2755", "cfg/..data 2000 2755", "cfg/key 2000 644",
		"sec 2000 2755", "sec/pw 2000 440",
		"info 2000 2755", "info/name 2000 644",
		"proj 2000 2755", "proj/key 2000 644", "proj/name 2000 644",
		"scratch 2000 2777", "scratch/new 2000", "s3cret",
	}
	got := lines[2:]
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ownership inside the pod:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The upstream [NodeConformance] spec "EmptyDir volumes when FSGroup is
// specified nonexistent volume subPath should have the correct mode and
// owner using FSGroup": a memory emptyDir mounted through a subPath that
// does not exist yet, in a pod running as 1001 with fsGroup 123. kubelet
// makes the subPath directory with the volume root's mode — a tmpfs root
// is 1777, the fsGroup adds setgid — so inside the container it is
// drwxrwsrwt (Go: dgtrwxrwxrwx), root's, of group 123, and a file the
// user makes there is the group's.
func TestAgentEmptyDirSubPathFSGroup(t *testing.T) {
	cd := containerd.Shared(t)
	n, rs, _ := newAgentWithCleanup(t, cd)
	volumeCleanup(t, n)
	writeManifest(t, n.manifests, "subfsg.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: subfsg, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 1001, fsGroup: 123}
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "exec sleep 3600"]
    volumeMounts: [{name: test-volume, mountPath: /test-volume, subPath: test-sub}]
  volumes:
  - {name: test-volume, emptyDir: {medium: Memory}}
`, images.TestboxImage))
	n.start(t)
	pod := n.waitRunning(t, 60*time.Second, "subfsg")["subfsg"]
	out, err := execIn(t, rs, &pod, `stat -c "%A %u %g" /test-volume; id -u; touch /test-volume/f && stat -c "%g" /test-volume/f`)
	if err != nil {
		t.Fatalf("in the pod: %v\n%s", err, out)
	}
	if want := "drwxrwsrwt 0 123\n1001\n123"; strings.TrimSpace(out) != want {
		t.Errorf("the subPath directory inside the pod (mode owner group; user; group of a new file):\n%s\nwant:\n%s", out, want)
	}
}
