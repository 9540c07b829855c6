//go:build faults

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/agent"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// startPrivateAPIServer starts a control plane of the test's own (a fault
// test stops its kube-apiserver), stopped at the end of the test.
func startPrivateAPIServer(t *testing.T, name string) *apiserver.Server {
	t.Helper()
	return startControlPlane(t, name, apiserver.Options{})
}

// Fault: kube-apiserver stopped and started 5 times, 2 s down each time
// plus its start (etcd keeps running). No pod restarts; the Lease, the node status and
// the pod statuses catch up after each start (a pod that finishes while
// the API server is away is reported Succeeded, a pod created after the
// last start runs); the agent's goroutines and open fds come back to
// their level before the faults and it holds no more connections to the
// API server than after the first restart.
func TestFaultAPIServerRestarts(t *testing.T) {
	const restarts = 5
	srv := startPrivateAPIServer(t, "apiserver-faults")
	c := newClusterNodeOn(t, containerd.Shared(t), srv)
	writeManifest(t, c.manifests, "static.yaml", podManifest("static", `["sleep"]`, "", 1))
	c.start(t)
	c.waitNodeReady(t)
	var names []string
	for i := range 3 {
		name := fmt.Sprintf("steady%d", i)
		names = append(names, name)
		c.createPod(t, apiTestPod(name, 1, "sleep"))
	}
	job := apiTestPod("job", 1, "exit", "--code", "0", "--after", "25s")
	job.Spec.RestartPolicy = v1.RestartPolicyNever
	c.createPod(t, job)
	for _, name := range append(names, "job") {
		c.waitPhase(t, name, v1.PodRunning, 30*time.Second)
	}
	before := snapshotPods(t, c.agentNode, c.rs, append(names, "static")...)
	goroutines := func() float64 { return metricValue(agentGet(t, c.url("/metrics")), "go_goroutines") }
	// The level before the faults: the agent settled with its watches.
	time.Sleep(2 * time.Second) // let informer start-up goroutines finish: a measurement, not synchronisation
	base := goroutines()
	fds := func() float64 { return metricValue(agentGet(t, c.url("/metrics")), "process_open_fds") }
	baseFDs := fds()
	// The agent reaches the API server only through the test's proxy: its
	// connections are the proxy's. The API server's own count of watches
	// (apiserver_longrunning_requests) mixes in the controllers' and
	// varies by tens across restarts; a leaked watch shows in the agent's
	// goroutines instead.
	var connsAfterFirst int

	start := time.Now()
	var restarted time.Time
	for i := range restarts {
		stopCtx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		err := srv.StopAPIServer(stopCtx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		// Down long enough for the agent's requests and watches to fail.
		time.Sleep(2 * time.Second) // the fault's duration, not synchronisation
		if err := srv.StartAPIServer(t.Context()); err != nil {
			t.Fatal(err)
		}
		restarted = time.Now()
		status := waitFor(t, 30*time.Second, "node status checked after the restart", func() (bool, error) {
			var st agent.Status
			if err := json.Unmarshal([]byte(agentGet(t, c.url("/status"))), &st); err != nil {
				return false, err
			}
			if st.Cluster == nil {
				return false, errors.New("no cluster status")
			}
			return st.Cluster.Node.LastStatusCheck.After(restarted), fmt.Errorf("last check %v", st.Cluster.Node.LastStatusCheck)
		})
		if i == 0 {
			connsAfterFirst = c.proxy.live()
		}
		t.Logf("restart %d: down %v, node status checked against it %v after the start",
			i+1, restarted.Sub(stopped).Round(time.Millisecond), status.Round(time.Millisecond))
	}
	t.Logf("%d kube-apiserver restarts in %v", restarts, time.Since(start).Round(time.Second))
	lease := waitFor(t, 30*time.Second, "Lease renewed after the last restart", func() (bool, error) {
		l, err := c.admin.CoordinationV1().Leases("kube-node-lease").Get(t.Context(), c.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return l.Spec.RenewTime.After(restarted), fmt.Errorf("renewed %v", l.Spec.RenewTime)
	})
	t.Logf("Lease renewed %v after the last restart", lease.Round(time.Millisecond))

	c.waitNodeReady(t)
	c.waitPhase(t, "job", v1.PodSucceeded, 40*time.Second)
	c.createPod(t, apiTestPod("late", 1, "sleep"))
	c.waitPhase(t, "late", v1.PodRunning, 30*time.Second)
	for _, name := range names {
		p := c.waitPhase(t, name, v1.PodRunning, 10*time.Second)
		if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].RestartCount != 0 || cs[0].State.Running == nil {
			t.Errorf("pod %s after the restarts: %+v", name, cs)
		}
	}
	after := snapshotPods(t, c.agentNode, c.rs, append(names, "static")...)
	before.compare(t, after, "after the API server restarts")

	// Goroutines back to the level before the faults: a leaked watch or
	// retry loop per restart would leave restarts × its goroutines.
	const goroutineSlack = 25
	var g float64
	waitFor(t, 30*time.Second, "goroutines back to the level before the faults", func() (bool, error) {
		g = goroutines()
		return g <= base+goroutineSlack, fmt.Errorf("%v goroutines, %v before the faults (+%d allowed)", g, base, goroutineSlack)
	})
	const fdSlack = 10
	var f float64
	waitFor(t, 30*time.Second, "open fds back to the level before the faults", func() (bool, error) {
		f = fds()
		return f <= baseFDs+fdSlack, fmt.Errorf("%v open fds, %v before the faults (+%d allowed)", f, baseFDs, fdSlack)
	})
	conns := c.proxy.live()
	if conns > max(connsAfterFirst, 1)+1 {
		t.Errorf("the agent holds %d connections to the API server after %d restarts, %d after the first: connections leak", conns, restarts, connsAfterFirst)
	}
	t.Logf("agent goroutines %v before the faults, %v after (bound +%d); open fds %v before, %v after (bound +%d); connections to the API server %d after the first restart, %d after the last",
		base, g, goroutineSlack, baseFDs, f, fdSlack, connsAfterFirst, conns)
}

// live is the number of connections through the proxy now.
func (p *tcpProxy) live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns) / 2
}
