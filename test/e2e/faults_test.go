package e2e

// Helpers of the fault tests (faults_*_test.go): the state of an agent's
// pods before and after a fault, and what a node holds that it should
// not. The long fault tests build only with -tags faults (make faults,
// which make test runs); the short ones run with the rest of the e2e tests.

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
)

// faultPods is the state of a set of the agent's pods the fault tests
// compare before and after a fault: per pod its UID, its running
// container ids, its sandbox ids and its restart counts.
type faultPods struct {
	uids       map[string]types.UID
	containers []string
	sandboxes  map[types.UID][]string
	restarts   map[string]int32
}

// snapshotPods records the state of the named pods (all Running).
func snapshotPods(t *testing.T, n *agentNode, rs interface {
	ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}, names ...string) faultPods {
	t.Helper()
	pods := n.waitRunning(t, time.Minute, names...)
	s := faultPods{uids: map[string]types.UID{}, sandboxes: map[types.UID][]string{}, restarts: map[string]int32{}}
	for name, p := range pods {
		if !slices.Contains(names, name) {
			continue
		}
		s.uids[name] = p.UID
		for _, c := range p.Status.ContainerStatuses {
			s.restarts[name+"/"+c.Name] = c.RestartCount
		}
		sel := map[string]string{podconfig.LabelPodUID: string(p.UID)}
		cs, err := rs.ListContainers(t.Context(), &runtimeapi.ContainerFilter{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				s.containers = append(s.containers, c.Id)
			}
		}
		sbs, err := rs.ListPodSandbox(t.Context(), &runtimeapi.PodSandboxFilter{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		for _, sb := range sbs {
			s.sandboxes[p.UID] = append(s.sandboxes[p.UID], sb.Id)
		}
		slices.Sort(s.sandboxes[p.UID])
	}
	slices.Sort(s.containers)
	return s
}

// compare reports every difference between two snapshots of the same
// pods: a pod lost or replaced, a container or sandbox changed, a
// restart.
func (s faultPods) compare(t *testing.T, after faultPods, what string) {
	t.Helper()
	for name, uid := range s.uids {
		if after.uids[name] != uid {
			t.Errorf("%s: pod %s was %s, now %q", what, name, uid, after.uids[name])
		}
		if !slices.Equal(s.sandboxes[uid], after.sandboxes[uid]) {
			t.Errorf("%s: pod %s sandboxes %v, now %v", what, name, s.sandboxes[uid], after.sandboxes[uid])
		}
	}
	if !slices.Equal(s.containers, after.containers) {
		t.Errorf("%s: running containers changed:\nbefore %v\nafter  %v", what, s.containers, after.containers)
	}
	for c, n := range s.restarts {
		if after.restarts[c] != n {
			t.Errorf("%s: container %s restartCount %d, now %d", what, c, n, after.restarts[c])
		}
	}
}

// healthCheck is GET /healthz/<check> on the agent's read-only port:
// nil when it answers 200.
func (n *agentNode) healthCheck(check string) error {
	path := "/healthz"
	if check != "" {
		path += "/" + check
	}
	resp, err := agentClient.Get(n.url(path))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}

// nodeLeftovers lists what the runtime, the cgroup tree, <root>/pods and
// the pod log dir hold of node n's pods that is not one of the desired
// pods (by name), and every duplicate: more than one sandbox of a pod, or
// more than one container of a name that has not exited (an exited one is
// the previous instance, kept as kubelet keeps it).
func nodeLeftovers(t *testing.T, n *agentNode, rs internalapi.RuntimeService, desired map[string]bool) (uids map[types.UID]string, problems []string) {
	t.Helper()
	uids = map[types.UID]string{}
	sbs, err := rs.ListPodSandbox(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	perPod := map[string]int{}
	for _, sb := range sbs {
		name, ok := strings.CutSuffix(sb.Labels[podconfig.LabelPodName], "-"+n.node)
		if !ok {
			continue
		}
		uid := types.UID(sb.Labels[podconfig.LabelPodUID])
		if !desired[name] {
			problems = append(problems, fmt.Sprintf("sandbox %.12s of removed pod %s (%s)", sb.Id, name, sb.State))
			continue
		}
		uids[uid] = name
		perPod[name]++
	}
	// The pods run sleep: one sandbox and one container each, ever.
	for name, c := range perPod {
		if c > 1 {
			problems = append(problems, fmt.Sprintf("pod %s has %d sandboxes", name, c))
		}
	}
	cs, err := rs.ListContainers(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	perName := map[string]int{}
	for _, c := range cs {
		name, ok := strings.CutSuffix(c.Labels[podconfig.LabelPodName], "-"+n.node)
		if !ok {
			continue
		}
		if !desired[name] {
			problems = append(problems, fmt.Sprintf("container %.12s of removed pod %s (%s)", c.Id, name, c.State))
			continue
		}
		if c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			perName[name+"/"+c.Metadata.GetName()]++
		}
	}
	for name, c := range perName {
		if c > 1 {
			problems = append(problems, fmt.Sprintf("duplicate container %s: %d containers not exited", name, c))
		}
	}
	known := func(uid string) bool { _, ok := uids[types.UID(uid)]; return ok }
	// Pod cgroups: kubepods/pod<uid>, kubepods/{burstable,besteffort}/pod<uid>.
	for _, top := range cgroupfs.PodDirs(n.cgroupRoot + "/kubepods") {
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if uid, ok := strings.CutPrefix(d.Name(), "pod"); ok && !known(uid) {
				problems = append(problems, "cgroup dir "+p)
			}
			return nil
		})
	}
	if es, err := os.ReadDir(filepath.Join(n.root, "pods")); err == nil {
		for _, e := range es {
			if !known(e.Name()) {
				problems = append(problems, "pod dir "+filepath.Join(n.root, "pods", e.Name()))
			}
		}
	}
	if es, err := os.ReadDir(n.logs); err == nil {
		for _, e := range es {
			parts := strings.Split(e.Name(), "_")
			if len(parts) != 3 || !known(parts[2]) {
				problems = append(problems, "log dir "+filepath.Join(n.logs, e.Name()))
			}
		}
	}
	slices.Sort(problems)
	return uids, problems
}

// metricValue is the sum of the samples of metric (with any labels) in a
// Prometheus text exposition; -1 when there is none.
func metricValue(text, metric string, labelFilter ...string) float64 {
	sum, seen := 0.0, false
lines:
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, metric+" ") && !strings.HasPrefix(l, metric+"{") {
			continue
		}
		for _, f := range labelFilter {
			if !strings.Contains(l, f) {
				continue lines
			}
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum, seen = sum+v, true
		}
	}
	if !seen {
		return -1
	}
	return sum
}
