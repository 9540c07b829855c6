package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/images"
)

// topPods are TestKubectlTop's static pods: one holding 24 MiB, one idle.
const topPods = `apiVersion: v1
kind: Pod
metadata: {name: topmem, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["/testbox", "alloc", "--mib", "24", "--hold"]
    resources: {limits: {memory: 64Mi}, requests: {memory: 32Mi, cpu: 10m}}
---
apiVersion: v1
kind: Pod
metadata: {name: topidle, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "sleep 3600"]
`

// kubectl top through the real kube-apiserver's aggregation layer: a
// metrics-server built from the module proxy (hack/metrics-server/build.sh)
// runs as a host process registered as APIService v1beta1.metrics.k8s.io
// and scrapes the kernelet node's /metrics/resource on its secure port
// (x509 client certificate, SubjectAccessReview). The metrics.k8s.io API
// (client-go's k8s.io/metrics client, which CI always has) then shows both
// pods with non-zero memory (topmem's at least its 24 MiB) and the node;
// `kubectl top pod` and `kubectl top node` show the same when kubectl is
// on PATH (it is logged when it is not).
func TestKubectlTop(t *testing.T) {
	env.RequireRoot(t)
	ctx := t.Context()
	buildStart := time.Now()
	bin, err := apiserver.EnsureMetricsServer(ctx, nil)
	env.Require(t, err == nil, fmt.Sprintf("metrics-server %s (cached by `make components`, or built from the module proxy: %v)",
		apiserver.DefaultMetricsServerVersion, err))
	t.Logf("metrics-server binary %s ready in %v", bin, time.Since(buildStart).Round(time.Millisecond))

	k := newKubeAPINode(t, securedAuth)
	writeManifest(t, k.manifests, "top.yaml", fmt.Sprintf(topPods, images.TestboxImage))
	k.start(t)
	topmem, topidle := "topmem-"+k.node, "topidle-"+k.node
	k.mirror(t, topmem, "app")
	k.mirror(t, topidle, "app")

	msStart := time.Now()
	env.Require(t, k.ip != "127.0.0.1", "a non-loopback IPv4 host address (metrics-server's EndpointSlice cannot be loopback)")
	ms, err := k.srv.StartMetricsServer(ctx, bin, k.ip)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("metrics-server log:\n%s", ms.LogTail(40))
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := ms.Stop(stopCtx); err != nil {
			t.Errorf("stop metrics-server: %v", err)
		}
	})
	t.Logf("metrics-server up, APIService %s Available in %v", apiserver.MetricsAPIService, time.Since(msStart).Round(time.Millisecond))

	mc, err := metricsclient.NewForConfig(k.srv.AdminRESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	mem := map[string]int64{}
	took := waitFor(t, 90*time.Second, "metrics.k8s.io PodMetrics of both pods and NodeMetrics", func() (bool, error) {
		for _, name := range []string{topmem, topidle} {
			pm, err := mc.MetricsV1beta1().PodMetricses("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Errorf("PodMetrics %s: %w", name, err)
			}
			if len(pm.Containers) != 1 || pm.Containers[0].Usage.Memory().IsZero() {
				return false, fmt.Errorf("PodMetrics %s: containers %+v", name, pm.Containers)
			}
			mem[name] = pm.Containers[0].Usage.Memory().Value()
		}
		nm, err := mc.MetricsV1beta1().NodeMetricses().Get(ctx, k.node, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("NodeMetrics %s: %w", k.node, err)
		}
		if nm.Usage.Memory().IsZero() {
			return false, fmt.Errorf("NodeMetrics %s: usage %+v", k.node, nm.Usage)
		}
		mem[k.node] = nm.Usage.Memory().Value()
		return true, nil
	})
	t.Logf("metrics.k8s.io after %v: %s %d bytes, %s %d bytes, node %d bytes", took.Round(time.Millisecond),
		topmem, mem[topmem], topidle, mem[topidle], mem[k.node])
	if mem[topmem] < 24<<20 {
		t.Errorf("PodMetrics %s memory %d bytes, want at least the 24 MiB it holds", topmem, mem[topmem])
	}

	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Logf("kubectl not on PATH: `kubectl top` not run (the metrics.k8s.io API above is what it reads)")
		return
	}
	out, err := k.kubectl(ctx, "", "top", "pod", "-n", "default")
	t.Logf("kubectl top pod:\n%s", out)
	if err != nil {
		t.Fatalf("kubectl top pod: %v", err)
	}
	for _, name := range []string{topmem, topidle} {
		if !strings.Contains(out, name) {
			t.Errorf("kubectl top pod: no %s", name)
		}
	}
	out, err = k.kubectl(ctx, "", "top", "node", k.node)
	t.Logf("kubectl top node:\n%s", out)
	if err != nil {
		t.Fatalf("kubectl top node: %v", err)
	}
	if !strings.Contains(out, k.node) {
		t.Errorf("kubectl top node: no %s", k.node)
	}
}
