package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	internalapi "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// Object strategies (issue 11): objectPods API pods, each mounting the same
// two configMaps and one secret, run by `kernelet run` with
// configMapAndSecretChangeDetectionStrategy Watch, then by a new node with
// Get, against the same kube-apiserver and containerd. What kernelet asks
// of the API server for those objects is counted from the API server's
// own metrics, as deltas over the same window for both (agent start, all
// pods Running, then objectsWindow more): apiserver_request_total for
// GET, LIST and WATCH of configMaps and secrets that are not
// cluster-scoped (the control plane's informers list and watch
// cluster-wide; WATCH counts a watch when it ends), and
// apiserver_longrunning_requests for the watches opened and still open at
// the end (the control plane's own watches of named configMaps are there
// before and after: the delta is kernelet's). Nothing else uses the API
// server of the benchmark meanwhile. The Watch strategy must hold one
// watch per object (3), not one per pod.
//
// 100 pods take minutes on a 2-CPU machine: `make test` leaves this out
// and `make bench-objects` runs it ($KERNELET_OBJECTS_PODS and
// $KERNELET_OBJECTS_WINDOW override the pod count and the window).
const (
	objectPods    = 100
	objectsWindow = 65 * time.Second // one volume refresh period (1 min) and some
)

// objectCounts are the API server's counters for configMaps and secrets
// in one namespace.
type objectCounts struct {
	get, list, watchEnded, watchesOpen float64
}

func (c objectCounts) sub(o objectCounts) objectCounts {
	return objectCounts{c.get - o.get, c.list - o.list, c.watchEnded - o.watchEnded, c.watchesOpen - o.watchesOpen}
}

// total counts every request, the watches still open included.
func (c objectCounts) total() float64 { return c.get + c.list + c.watchEnded + c.watchesOpen }

// scrapeObjectCounts reads the API server's /metrics.
func scrapeObjectCounts(ctx context.Context, admin kubernetes.Interface) (objectCounts, error) {
	raw, err := admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return objectCounts{}, fmt.Errorf("apiserver /metrics: %w", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		return objectCounts{}, fmt.Errorf("apiserver /metrics: %w", err)
	}
	var c objectCounts
	each := func(name string, f func(l map[string]string, v float64)) {
		fam := fams[name]
		if fam == nil {
			return
		}
		for _, m := range fam.GetMetric() {
			l := labels(m)
			if l["resource"] != "configmaps" && l["resource"] != "secrets" {
				continue
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			f(l, v)
		}
	}
	each("apiserver_request_total", func(l map[string]string, v float64) {
		switch {
		case l["scope"] == "cluster":
		case l["verb"] == "GET":
			c.get += v
		case l["verb"] == "LIST":
			c.list += v
		case l["verb"] == "WATCH":
			c.watchEnded += v
		}
	})
	each("apiserver_longrunning_requests", func(l map[string]string, v float64) {
		if l["verb"] == "WATCH" && l["scope"] != "cluster" {
			c.watchesOpen += v
		}
	})
	return c, nil
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func envInt(b *testing.B, name string, def int) int {
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want a positive integer", name, s)
		}
		return n
	}
	return def
}

// envDuration is $name as a duration, def when unset.
func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	if s := os.Getenv(name); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		return d
	}
	return def
}

// benchCluster is a benchmark's shared containerd and API server, an admin
// client of the latter and a CRI runtime client of the former (closed when
// the benchmark ends).
func benchCluster(b *testing.B) (*containerd.Instance, *apiserver.Server, kubernetes.Interface, internalapi.RuntimeService) {
	cd := containerd.Shared(b)
	srv := apiserver.Shared(b)
	admin, err := srv.AdminClient()
	if err != nil {
		b.Fatal(err)
	}
	rs, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(cd.Endpoint()).WithConnectionTimeout(10 * time.Second).Build(b.Context())
	if err != nil {
		b.Fatalf("CRI runtime client: %v", err)
	}
	b.Cleanup(func() { _ = rs.Close(context.Background()) })
	return cd, srv, admin, rs
}

// benchNamespace creates the namespace "<run id>-<suffix>" for a
// benchmark's API pods and deletes it when the benchmark ends.
func benchNamespace(ctx context.Context, b *testing.B, admin kubernetes.Interface, suffix string) string {
	ns := strings.ToLower(env.RunID()) + "-" + suffix
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := admin.CoreV1().Namespaces().Delete(c, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			b.Errorf("cleanup: delete namespace %s: %v", ns, err)
		}
	})
	return ns
}

func BenchmarkObjectStrategies(b *testing.B) {
	env.RequireRoot(b)
	cd, srv, admin, rs := benchCluster(b)
	ctx := b.Context()
	pods := envInt(b, "KERNELET_OBJECTS_PODS", objectPods)
	window := envDuration(b, "KERNELET_OBJECTS_WINDOW", objectsWindow)
	ns := benchNamespace(ctx, b, admin, "objects")
	for _, name := range []string{"cfg-a", "cfg-b"} {
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string]string{"key": name}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec"},
		Data: map[string][]byte{"pw": []byte("s3cret")}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}

	results := map[string]objectCounts{}
	for range b.N {
		for _, strategy := range []string{"Watch", "Get"} {
			lower := strings.ToLower(strategy)
			a := &nodeAgent{
				name: "kernelet", ns: ns, admin: admin, rs: rs, endpoint: cd.Endpoint(), srv: srv,
				node:       strings.ToLower(env.RunID()) + "-obj-" + lower,
				cgroupRoot: "/" + env.RunID() + "-obj-" + lower,
				tag:        "obj" + lower,
				bin:        kerneletBinary(b),
				podPrefix:  "fp-obj" + lower + "-", evictionConfig: footprintEviction,
			}
			results[strategy] = a.runObjects(b, strategy, pods, window)
		}
	}
	w, g := results["Watch"], results["Get"]
	b.Logf("%d pods × (2 configMaps + 1 secret), from agent start to all Running + %v; API server requests for them (apiserver_request_total deltas; watches open from apiserver_longrunning_requests):\n"+
		"  %-22s %8s %8s\n  %-22s %8.0f %8.0f\n  %-22s %8.0f %8.0f\n  %-22s %8.0f %8.0f\n  %-22s %8.0f %8.0f\n  %-22s %8.0f %8.0f",
		pods, window, "", "Watch", "Get",
		"GET", w.get, g.get,
		"LIST", w.list, g.list,
		"WATCH ended", w.watchEnded, g.watchEnded,
		"watches opened, open", w.watchesOpen, g.watchesOpen,
		"requests (open incl.)", w.total(), g.total())
	b.ReportMetric(w.watchesOpen, "watches-open/watch")
	b.ReportMetric(w.total(), "requests/watch")
	b.ReportMetric(g.total(), "requests/get")
	if w.watchesOpen != 3 {
		b.Errorf("Watch strategy: %v watches open for 3 objects referenced by %d pods, want one per object", w.watchesOpen, pods)
	}
	if g.watchesOpen != 0 {
		b.Errorf("Get strategy: %v watches open, want none", g.watchesOpen)
	}
}

// runObjects runs one agent with strategy and pods pods and returns the
// API server's counts for the window.
func (a *nodeAgent) runObjects(b *testing.B, strategy string, pods int, window time.Duration) objectCounts {
	b.Helper()
	ctx := b.Context()
	a.extraConfig = "configMapAndSecretChangeDetectionStrategy: " + strategy + "\n"
	a.prepare(b)
	before, err := scrapeObjectCounts(ctx, a.admin)
	if err != nil {
		b.Fatal(err)
	}
	a.start(b)
	a.waitNodeReady(b)
	no, grace, mode := false, int64(1), int32(0o444)
	for i := range pods {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fp-%s-%03d", a.tag, i), Namespace: a.ns},
			Spec: v1.PodSpec{
				NodeName: a.node, HostNetwork: true, DNSPolicy: v1.DNSDefault,
				AutomountServiceAccountToken: &no, TerminationGracePeriodSeconds: &grace,
				Tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists}},
				Containers: []v1.Container{{Name: "app", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent,
					Args:         []string{"pause"},
					VolumeMounts: []v1.VolumeMount{{Name: "a", MountPath: "/a"}, {Name: "b", MountPath: "/b"}, {Name: "s", MountPath: "/s"}}}},
				Volumes: []v1.Volume{
					{Name: "a", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg-a"}, DefaultMode: &mode}}},
					{Name: "b", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg-b"}}}},
					{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec"}}},
				},
			},
		}
		a.wait(b, 30*time.Second, "create pod "+pod.Name, func() (bool, error) {
			_, err := a.admin.CoreV1().Pods(a.ns).Create(ctx, pod, metav1.CreateOptions{})
			return err == nil || apierrors.IsAlreadyExists(err), err
		})
	}
	took := a.wait(b, 10*time.Minute, fmt.Sprintf("%d pods Running", pods), func() (bool, error) {
		l, err := a.admin.CoreV1().Pods(a.ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + a.node})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range l.Items {
			if p.Status.Phase == v1.PodRunning {
				running++
			}
		}
		return running == pods, fmt.Errorf("%d of %d pods Running", running, pods)
	})
	b.Logf("%s: %d pods Running %v after the last was created; measuring %v more", strategy, pods, took.Round(time.Millisecond), window)
	time.Sleep(window) // the measured window, not a synchronisation
	after, err := scrapeObjectCounts(ctx, a.admin)
	if err != nil {
		b.Fatal(err)
	}
	a.cleanup(b)
	return after.sub(before)
}
