package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/images"
)

// TestClusterPodSpec runs the pod spec features that come through the API
// server against kernelet with the real kube-apiserver and containerd:
// an ephemeral container added through the ephemeralcontainers
// subresource, activeDeadlineSeconds lowered on a running pod,
// RuntimeClasses (one with handler runc, one missing on the node), and
// kubelet's image pull reasons.
func TestClusterPodSpec(t *testing.T) {
	c := newClusterNode(t)
	c.start(t)
	t.Run("EphemeralContainer", func(t *testing.T) { testEphemeralContainer(t, c) })
	t.Run("ActiveDeadlineSeconds", func(t *testing.T) { testActiveDeadline(t, c) })
	t.Run("RuntimeClass", func(t *testing.T) { testRuntimeClass(t, c) })
	t.Run("ImagePullReasons", func(t *testing.T) { testImagePullReasons(t, c) })
}

// testEphemeralContainer adds a debug container targeting the app
// container, as `kubectl debug --target=app` does: it runs, shows in
// ephemeralContainerStatuses and shares the app's pid namespace.
func testEphemeralContainer(t *testing.T, c *clusterNode) {
	pod := c.createPod(t, apiTestPod("debugged", 1, "sleep"))
	c.waitPhase(t, "debugged", v1.PodRunning, 30*time.Second)
	cur, err := c.getPod(t, "debugged")
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, v1.EphemeralContainer{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: images.TestboxImage,
			ImagePullPolicy: v1.PullIfNotPresent, Args: []string{"sleep"}, TerminationMessagePolicy: v1.TerminationMessageReadFile},
		TargetContainerName: "app"})
	added := time.Now()
	if _, err := c.admin.CoreV1().Pods(c.ns).UpdateEphemeralContainers(t.Context(), "debugged", cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var st v1.ContainerStatus
	waitFor(t, 30*time.Second, "ephemeral container running", func() (bool, error) {
		p, err := c.getPod(t, "debugged")
		if err != nil {
			return false, err
		}
		if len(p.Status.EphemeralContainerStatuses) != 1 {
			return false, fmt.Errorf("ephemeralContainerStatuses %+v", p.Status.EphemeralContainerStatuses)
		}
		st = p.Status.EphemeralContainerStatuses[0]
		return st.State.Running != nil, fmt.Errorf("state %+v", st.State)
	})
	t.Logf("ephemeral container running %v after it was added", time.Since(added).Round(time.Millisecond))
	if st.Name != "debugger" || st.ContainerID == "" || st.Ready || st.RestartCount != 0 {
		t.Errorf("ephemeral status %+v", st)
	}
	c.waitEvents(t, pod, "Created", "Started")

	// The debugger joined the app's pid namespace (CRI NamespaceMode
	// TARGET): its runtime spec names the app's pid namespace by path.
	ctrs, _ := podObjects(t, c.rs, pod.UID)
	ids := map[string]string{}
	for _, ct := range ctrs {
		ids[ct.GetMetadata().GetName()] = ct.Id
	}
	if ids["debugger"] == "" || ids["app"] == "" {
		t.Fatalf("runtime containers %v", ids)
	}
	if app := pidNamespace(t, c, ids["app"]); app != "" {
		t.Errorf("app pid namespace %q, want a new one", app)
	}
	dbg := pidNamespace(t, c, ids["debugger"])
	appStatus, err := c.rs.ContainerStatus(t.Context(), ids["app"], true)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(appStatus.GetInfo()["info"]), &info); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("/proc/%d/ns/pid", info.Pid); dbg != want {
		t.Errorf("debugger pid namespace %q, want the app's %q", dbg, want)
	}
}

// pidNamespace is the pid namespace path in a container's runtime spec
// ("" when it has a new one).
func pidNamespace(t *testing.T, c *clusterNode, id string) string {
	t.Helper()
	st, err := c.rs.ContainerStatus(t.Context(), id, true)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		RuntimeSpec struct {
			Linux struct {
				Namespaces []struct {
					Type string `json:"type"`
					Path string `json:"path"`
				} `json:"namespaces"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &info); err != nil {
		t.Fatal(err)
	}
	for _, ns := range info.RuntimeSpec.Linux.Namespaces {
		if ns.Type == "pid" {
			return ns.Path
		}
	}
	t.Fatalf("container %s has no pid namespace entry", id)
	return ""
}

// testActiveDeadline lowers activeDeadlineSeconds of a running pod (the
// conformance spec "should allow activeDeadlineSeconds to be updated"):
// the pod goes Failed with kubelet's reason and message.
func testActiveDeadline(t *testing.T, c *clusterNode) {
	pod := apiTestPod("deadline", 1, "sleep")
	long := int64(3600)
	pod.Spec.ActiveDeadlineSeconds = &long
	pod = c.createPod(t, pod)
	c.waitPhase(t, "deadline", v1.PodRunning, 30*time.Second)
	patch := []byte(`{"spec":{"activeDeadlineSeconds":5}}`)
	if _, err := c.admin.CoreV1().Pods(c.ns).Patch(t.Context(), "deadline", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	updated := time.Now()
	failed := c.waitPhase(t, "deadline", v1.PodFailed, 30*time.Second)
	t.Logf("pod Failed %v after its deadline was lowered to 5 s", time.Since(updated).Round(time.Millisecond))
	if failed.Status.Reason != "DeadlineExceeded" || failed.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("reason %q message %q", failed.Status.Reason, failed.Status.Message)
	}
	c.waitEvents(t, pod, "DeadlineExceeded")
	waitFor(t, 30*time.Second, "the pod's container stopped", func() (bool, error) {
		p, err := c.getPod(t, "deadline")
		if err != nil {
			return false, err
		}
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Terminated != nil, fmt.Errorf("phase %s statuses %+v", p.Status.Phase, cs)
	})
}

// testRuntimeClass: a RuntimeClass with handler runc runs a pod (the
// sandbox has that handler); a pod naming a RuntimeClass that does not
// exist is refused by the API server's RuntimeClass admission, and one
// whose RuntimeClass went away before it reached the node fails its
// sandbox as kubelet does (FailedCreatePodSandBox, not found).
func testRuntimeClass(t *testing.T, c *clusterNode) {
	rcs := c.admin.NodeV1().RuntimeClasses()
	name, gone := c.ns+"-runc", c.ns+"-gone"
	for _, n := range []string{name, gone} {
		if _, err := rcs.Create(t.Context(), &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: n}, Handler: "runc"}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := rcs.Delete(context.Background(), n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete RuntimeClass %s: %v", n, err)
			}
		})
	}
	withRC := apiTestPod("with-rc", 1, "sleep")
	withRC.Spec.RuntimeClassName = &name
	withRC = c.createPod(t, withRC)
	c.waitPhase(t, "with-rc", v1.PodRunning, 30*time.Second)
	_, sbs := podObjects(t, c.rs, withRC.UID)
	if len(sbs) != 1 || sbs[0].RuntimeHandler != "runc" {
		t.Errorf("sandboxes %+v, want one with handler runc", sbs)
	}

	missing := apiTestPod("missing-rc", 1, "sleep")
	none := c.ns + "-none"
	missing.Spec.RuntimeClassName = &none
	missing.Namespace, missing.Spec.NodeName = c.ns, c.node
	_, err := c.admin.CoreV1().Pods(c.ns).Create(t.Context(), missing, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("pod naming a missing RuntimeClass: %v, want Forbidden", err)
	}

	// Created while its RuntimeClass exists, held by a scheduling gate
	// until the RuntimeClass is gone, then scheduled to this node.
	late := apiTestPod("late-rc", 1, "sleep")
	late.Spec.RuntimeClassName = &gone
	late.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "kernelet.test/hold"}}
	late.Spec.NodeSelector = map[string]string{v1.LabelHostname: c.node}
	late.Namespace = c.ns
	late, err = c.admin.CoreV1().Pods(c.ns).Create(t.Context(), late, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rcs.Delete(t.Context(), gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.admin.CoreV1().Pods(c.ns).Patch(t.Context(), "late-rc", types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/spec/schedulingGates"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("Failed to create pod sandbox: runtimeclass.node.k8s.io %q not found", gone)
	waitFor(t, 60*time.Second, "FailedCreatePodSandBox of late-rc", func() (bool, error) {
		evs, err := c.admin.CoreV1().Events(c.ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(late.UID)})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == "FailedCreatePodSandBox" && e.Message == want {
				return true, nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, fmt.Errorf("events %q", seen)
	})
	p, err := c.getPod(t, "late-rc")
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != v1.PodPending {
		t.Errorf("late-rc phase %s, want Pending", p.Status.Phase)
	}
	ctrs, sbs := podObjects(t, c.rs, late.UID)
	if len(ctrs)+len(sbs) != 0 {
		t.Errorf("late-rc has %d containers and %d sandboxes in the runtime", len(ctrs), len(sbs))
	}
}

// testImagePullReasons: a missing image gives ErrImagePull, then
// ImagePullBackOff once the BackOff event is out (issue 15 item 9); an
// absent image with pull policy Never gives ErrImageNeverPull; an image
// name that is no reference gives InvalidImageName.
func testImagePullReasons(t *testing.T, c *clusterNode) {
	missing := apiTestPod("no-image", 1, "sleep")
	missing.Spec.Containers[0].Image = images.TestRegistryHost + "/nosuch:v1"
	missing = c.createPod(t, missing)
	never := apiTestPod("never-pull", 1, "sleep")
	never.Spec.Containers[0].Image = images.TestRegistryHost + "/nosuch:v2"
	never.Spec.Containers[0].ImagePullPolicy = v1.PullNever
	never = c.createPod(t, never)
	invalid := apiTestPod("bad-name", 1, "sleep")
	invalid.Spec.Containers[0].Image = "img//bad:1"
	invalid = c.createPod(t, invalid)

	waiting := func(name string) (*v1.ContainerStateWaiting, error) {
		p, err := c.getPod(t, name)
		if err != nil {
			return nil, err
		}
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return nil, fmt.Errorf("statuses %+v", p.Status.ContainerStatuses)
		}
		return p.Status.ContainerStatuses[0].State.Waiting, nil
	}
	for name, want := range map[string]string{"never-pull": "ErrImageNeverPull", "bad-name": "InvalidImageName"} {
		waitFor(t, 30*time.Second, name+" waiting "+want, func() (bool, error) {
			w, err := waiting(name)
			if err != nil {
				return false, err
			}
			return w.Reason == want, fmt.Errorf("waiting %+v", w)
		})
	}
	c.waitEvents(t, never, "ErrImageNeverPull", "Failed")
	c.waitEvents(t, invalid, "InspectFailed", "Failed")

	var first string
	waitFor(t, 30*time.Second, "no-image pull failed", func() (bool, error) {
		w, err := waiting("no-image")
		if err != nil {
			return false, err
		}
		first = w.Reason
		return w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff", fmt.Errorf("waiting %+v", w)
	})
	c.waitEvents(t, missing, "Pulling", "Failed", "BackOff")
	backoffSeen := time.Now()
	waitFor(t, 15*time.Second, "no-image ImagePullBackOff after the BackOff event", func() (bool, error) {
		w, err := waiting("no-image")
		if err != nil {
			return false, err
		}
		return w.Reason == "ImagePullBackOff" && strings.HasPrefix(w.Message, "Back-off pulling image"), fmt.Errorf("waiting %+v", w)
	})
	t.Logf("no-image: first waiting reason %s; ImagePullBackOff in the API %v after the BackOff event was seen",
		first, time.Since(backoffSeen).Round(time.Millisecond))
}

// TestKubectlDebug: `kubectl debug --target` adds an ephemeral container
// to an API pod on the agent; kubectl logs and exec reach it through the
// API server and the kubelet API, and it sees the target's processes.
func TestKubectlDebug(t *testing.T) {
	env.RequireRoot(t)
	_, err := exec.LookPath("kubectl")
	env.Require(t, err == nil, "kubectl (preinstalled on the development machines)")
	k := newKubeAPINode(t, securedAuth)
	ns := strings.ToLower(env.RunID()) + "-debug"
	ctx := t.Context()
	if _, err := k.admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k.namespaces = append(k.namespaces, ns)
	t.Cleanup(func() {
		zero := int64(0)
		bg := context.Background()
		_ = k.admin.CoreV1().Pods(ns).Delete(bg, "target", metav1.DeleteOptions{GracePeriodSeconds: &zero})
		_ = k.admin.CoreV1().Namespaces().Delete(bg, ns, metav1.DeleteOptions{})
	})
	k.start(t)
	pod := apiTestPod("target", 1, "sleep")
	pod.Namespace, pod.Spec.NodeName = ns, k.node
	waitFor(t, 30*time.Second, "create pod target", func() (bool, error) {
		_, err := k.admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err == nil, err
	})
	waitFor(t, 30*time.Second, "pod target Running", func() (bool, error) {
		p, err := k.admin.CoreV1().Pods(ns).Get(ctx, "target", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == v1.PodRunning, fmt.Errorf("phase %q", p.Status.Phase)
	})
	out, err := k.kubectl(ctx, "", "-n", ns, "debug", "target", "--image="+images.TestboxImage, "--image-pull-policy=IfNotPresent",
		"--target=app", "-c", "debugger", "--", "/bin/sh", "-c", "echo debugger-up; exec sleep 3600")
	if err != nil {
		t.Fatalf("kubectl debug: %v\n%s", err, out)
	}
	waitFor(t, 30*time.Second, "kubectl logs of the debugger", func() (bool, error) {
		out, err := k.kubectl(ctx, "", "-n", ns, "logs", "target", "-c", "debugger")
		return strings.Contains(out, "debugger-up"), fmt.Errorf("%q %v", out, err)
	})
	out, err = k.kubectl(ctx, "", "-n", ns, "exec", "target", "-c", "debugger", "--", "ps")
	if err != nil || !strings.Contains(out, "/testbox sleep") {
		t.Errorf("ps in the debugger does not show the target's process: %v\n%s", err, out)
	}
	p, err := k.admin.CoreV1().Pods(ns).Get(ctx, "target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if es := p.Status.EphemeralContainerStatuses; len(es) != 1 || es[0].Name != "debugger" || es[0].State.Running == nil {
		t.Errorf("ephemeralContainerStatuses %+v", es)
	}
}
