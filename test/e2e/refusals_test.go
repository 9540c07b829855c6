package e2e

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// TestAgentRefusesUnimplementedPodFields: a static pod with fields of
// v1.37 that kernelet does not act on (an h2c probe, a TLS gRPC probe,
// bind mount options, an emptyDir mode, files owned by a chosen user) is
// refused at admission — Failed, UnexpectedAdmissionError, each field
// named — and nothing of it reaches the runtime, while a plain pod beside
// it runs.
func TestAgentRefusesUnimplementedPodFields(t *testing.T) {
	n, rs, _ := newAgentWithCleanup(t, containerd.Shared(t))
	refused := `apiVersion: v1
kind: Pod
metadata: {name: refused, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  volumes:
  - {name: scratch, emptyDir: {mode: 0700}}
  - name: cfg
    projected: {defaultUser: 1000, sources: [{downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}}]}
  containers:
  - name: app
    image: ` + images.TestboxImage + `
    imagePullPolicy: IfNotPresent
    args: ["sleep"]
    volumeMounts: [{name: scratch, mountPath: /scratch, bindMountOptions: [noexec]}]
    livenessProbe: {httpGet: {port: 8080, protocol: HTTP2}}
    readinessProbe: {grpc: {port: 9090, mode: TLS}}
`
	writeManifest(t, n.manifests, "refused.yaml", refused)
	writeManifest(t, n.manifests, "plain.yaml", podManifest("plain", `["sleep"]`, "", 2))
	n.start(t)
	n.waitRunning(t, 30*time.Second, "plain")

	var pod v1.Pod
	deadline := time.Now().Add(20 * time.Second)
	for pod.Status.Phase != v1.PodFailed {
		if time.Now().After(deadline) {
			t.Fatalf("the pod with unimplemented fields is not Failed: %+v\n%s", pod.Status, n.log(t))
		}
		time.Sleep(50 * time.Millisecond)
		l, err := n.pods(t.Context())
		if err != nil {
			continue
		}
		for _, p := range l.Items {
			if p.Name == "refused-"+n.node {
				pod = p
			}
		}
	}
	if pod.Status.Reason != "UnexpectedAdmissionError" {
		t.Errorf("reason %q, want UnexpectedAdmissionError", pod.Status.Reason)
	}
	for _, field := range []string{
		"spec.volumes[0].emptyDir.mode",
		"spec.volumes[1].projected.defaultUser",
		"spec.containers[0].volumeMounts[0].bindMountOptions",
		"spec.containers[0].livenessProbe.httpGet.protocol",
		"spec.containers[0].readinessProbe.grpc.mode",
	} {
		if !strings.Contains(pod.Status.Message, field+": ") {
			t.Errorf("the message does not name %s: %s", field, pod.Status.Message)
		}
	}
	t.Logf("refused: %s: %s", pod.Status.Reason, pod.Status.Message)
	sbs, err := rs.ListPodSandbox(t.Context(), &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{podconfig.LabelPodUID: string(pod.UID)}})
	if err != nil || len(sbs) != 0 {
		t.Errorf("sandboxes of the refused pod: %v, %v (want none)", sbs, err)
	}
}
