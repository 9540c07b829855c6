package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// A pod's runtime status is read by List calls (its sandboxes and
// containers by its UID label) only where nothing else tells it: at most
// twice to start a one-container pod (the first sync's read, the read
// back of what it started — the lifecycle events that start caused wake
// no second sync) and twice to remove it (the kill's read, the cleanup's
// look for anything left; the stopped pod's final status is read by the
// IDs it stopped, and the housekeeping does not look at a pod its worker
// removed). On containerd 1.6 (relist) and containerd 2 (runtime events).
func TestPodStatusReads(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flavor containerd.Flavor
	}{{"relist", containerd.Containerd1}, {"evented", containerd.Containerd2}} {
		t.Run(tc.name, func(t *testing.T) { testPodStatusReads(t, containerd.SharedFlavor(t, tc.flavor)) })
	}
}

func testPodStatusReads(t *testing.T, cd *containerd.Instance) {
	const pods = 4
	n, rs, _ := newAgentWithCleanup(t, cd)
	logOnFailure(t, n)
	proxy := startCRIProxy(t, cd.Endpoint())
	n.endpoint = proxy.Endpoint()
	n.start(t)
	n.waitRunning(t, time.Minute) // serving
	// lists counts the List calls of [from, to) selecting one pod, by pod
	// UID (the sandbox and container lists apart).
	lists := func(from, to time.Time) map[string][2]int {
		out := map[string][2]int{}
		for _, c := range proxy.Calls("ListPodSandbox", from) {
			if r, ok := c.Request.(*runtimeapi.ListPodSandboxRequest); ok && c.Time.Before(to) {
				if uid := r.GetFilter().GetLabelSelector()[podconfig.LabelPodUID]; uid != "" {
					v := out[uid]
					v[0]++
					out[uid] = v
				}
			}
		}
		for _, c := range proxy.Calls("ListContainers", from) {
			if r, ok := c.Request.(*runtimeapi.ListContainersRequest); ok && c.Time.Before(to) {
				if uid := r.GetFilter().GetLabelSelector()[podconfig.LabelPodUID]; uid != "" {
					v := out[uid]
					v[1]++
					out[uid] = v
				}
			}
		}
		return out
	}
	check := func(what string, got map[string][2]int, uids map[string]string) {
		t.Helper()
		for name, uid := range uids {
			c := got[uid]
			t.Logf("%s %s: %d sandbox lists, %d container lists", what, name, c[0], c[1])
			if c[0] > 2 || c[1] > 2 {
				t.Errorf("%s %s read by %d sandbox and %d container lists, want at most 2 each", what, name, c[0], c[1])
			}
			if c[0] == 0 {
				t.Errorf("%s %s: no list of its sandboxes seen (the count is blind)", what, name)
			}
		}
	}

	start := time.Now()
	var names []string
	for i := range pods {
		name := fmt.Sprintf("reads%d", i)
		names = append(names, name)
		writeManifest(t, n.manifests, name+".yaml", podManifest(name, `["sleep"]`, "", 2))
	}
	running := n.waitRunning(t, time.Minute, names...)
	uids := map[string]string{}
	for name, p := range running {
		uids[name] = string(p.UID)
	}
	time.Sleep(3 * time.Second) // relists (or runtime events) of the started pods
	started := time.Now()
	check("start of", lists(start, started), uids)

	for _, name := range names {
		if err := os.Remove(filepath.Join(n.manifests, name+".yaml")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, time.Minute, "pods removed", func() (bool, error) {
		l, err := n.pods(t.Context())
		if err != nil {
			return false, err
		}
		sbs, err := rs.ListPodSandbox(t.Context(), nil)
		if err != nil {
			return false, err
		}
		mine := 0
		for _, sb := range sbs {
			for _, uid := range uids {
				if sb.GetLabels()[podconfig.LabelPodUID] == uid {
					mine++
				}
			}
		}
		return len(l.Items) == 0 && mine == 0, fmt.Errorf("%d pods listed, %d sandboxes left", len(l.Items), mine)
	})
	time.Sleep(5 * time.Second) // relists and housekeeping passes after the removal
	check("removal of", lists(started, time.Now()), uids)
}
