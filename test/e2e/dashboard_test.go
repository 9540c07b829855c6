package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/kernelet/kernelet/agent/live"
	"github.com/kernelet/kernelet/internal/top"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// dashboardPods: "grow" allocates 96 MiB at 4 MiB/s and holds it (its
// working set rises for ~24 s); "oom" allocates 64 MiB against a 32 MiB
// limit and is OOM-killed, again after each restart.
func dashboardPods(t *testing.T, n *agentNode) {
	t.Helper()
	writeManifest(t, n.manifests, "grow.yaml", podManifest("grow", `["alloc", "--mib", "96", "--rate", "4", "--hold"]`,
		"    resources:\n      requests: {memory: 32Mi}\n      limits: {memory: 192Mi}\n", 2))
	writeManifest(t, n.manifests, "oom.yaml", podManifest("oom", `["alloc", "--mib", "64", "--hold"]`,
		"    resources:\n      requests: {memory: 32Mi}\n      limits: {memory: 32Mi}\n", 2))
}

// TestDashboard runs an agent with a growing pod and an OOM-killed one and
// looks at them the way an operator would: the dashboard in headless
// Chromium (live values change, the OOM kill shows in the timeline, a
// screenshot is saved, nothing is requested but the agent's origin) and
// `kernelet top` under tmux (the pods are listed, a key re-sorts them).
func TestDashboard(t *testing.T) {
	env.RequireRoot(t)
	chromium, errChromium := exec.LookPath("chromium")
	env.Require(t, errChromium == nil, "Debian chromium (hack/deps.sh browser)")
	_, errTmux := exec.LookPath("tmux")
	env.Require(t, errTmux == nil, "tmux (hack/deps.sh browser)")
	cd := containerd.Shared(t)
	n, _, _ := newAgentWithCleanup(t, cd)
	dashboardPods(t, n)
	n.start(t)
	n.waitRunning(t, 60*time.Second, "grow")
	t.Run("chromium", func(t *testing.T) { testDashboardChromium(t, n, chromium) })
	t.Run("top", func(t *testing.T) { testDashboardTop(t, n) })
	t.Run("endpoints", func(t *testing.T) { testDashboardEndpoints(t, n) })
}

// TestDashboardConditions: a node whose memory.available threshold is met
// at once (99% of capacity; no pods) streams the MemoryPressure change
// with kubelet's reason. A test of its own, not a subtest of
// TestDashboard: its agent has the same node name and cgroup root as
// TestDashboard's (one per test run), so the two must not live at the
// same time — its cleanup would kill the other's pods and find their
// cgroups busy.
func TestDashboardConditions(t *testing.T) {
	env.RequireRoot(t)
	n, _, _ := newAgentWithCleanup(t, containerd.Shared(t))
	f, err := os.OpenFile(n.cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("evictionHard: {memory.available: \"99%\"}\n")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	n.start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	updates := make(chan live.Event, 100)
	go top.Stream(ctx, http.DefaultClient, strings.TrimSuffix(n.url(""), "/"), 500*time.Millisecond, func(u top.Update) {
		if u.Event != nil {
			updates <- *u.Event
		}
	})
	for {
		select {
		case e := <-updates:
			if c := e.Condition; c != nil && c.Type == "MemoryPressure" && c.Status == "True" {
				if c.Reason != "KubeletHasInsufficientMemory" || c.Message != "kubelet has insufficient memory available" {
					t.Errorf("condition change %+v, want kubelet's reason and message", c)
				}
				t.Logf("streamed: %s at %s", top.Describe(e), e.Time.Format(time.RFC3339Nano))
				return
			}
		case <-ctx.Done():
			t.Fatalf("no MemoryPressure=True change streamed in 60 s\nkernelet log:\n%s", tail(n.log(t), 40))
		}
	}
}

// testDashboardEndpoints: the snapshot is also served on the kubelet API
// (TLS; anonymous and AlwaysAllow on this node: the nodes/proxy
// subresource) and on the local socket.
func testDashboardEndpoints(t *testing.T, n *agentNode) {
	secure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the agent's self-signed certificate
	sock := filepath.Join(n.root, "kernelet.sock")
	local := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
	for name, c := range map[string]struct {
		client *http.Client
		url    string
	}{
		"secure port":  {secure, "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(n.securePort)) + "/dashboard/api/snapshot"},
		"local socket": {local, "http://kernelet/dashboard/api/snapshot"},
	} {
		resp, err := c.client.Get(c.url)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var s live.Snapshot
		err = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || s.NodeName != n.node || len(s.Pods) != 2 || s.Node.CapacityBytes == 0 {
			t.Errorf("%s %s: %d %v %+v", name, c.url, resp.StatusCode, err, s)
		}
	}
}

// artifactDir is where a test leaves files for the CI log: $KERNELET_BIN/
// test-artifacts (the Makefile's bin/, kept after the run), else the
// test's artifact directory.
func artifactDir(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("KERNELET_BIN"); bin != "" {
		dir := filepath.Join(bin, "test-artifacts")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.ArtifactDir()
}

func testDashboardChromium(t *testing.T, n *agentNode, chromium string) {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.WindowSize(1280, 1000),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
	} // no UserDataDir: chromedp makes a fresh one and removes it
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancelAlloc() // kills the browser and its children
	ctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	var mu sync.Mutex
	var requested []string
	requests := chromedp.Events(ctx, network.RequestWillBeSent) // starts the browser
	go func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			mu.Lock()
			requested = append(requested, ev.Request.URL)
			mu.Unlock()
		}
	}()
	page := n.url("/dashboard/")
	within := func(timeout time.Duration) context.Context {
		c, cancel := context.WithTimeout(ctx, timeout)
		t.Cleanup(cancel)
		return c
	}
	fail := func(what string, err error) {
		t.Helper()
		t.Fatalf("%s: %v\nkernelet log:\n%s", what, err, tail(n.log(t), 40))
	}
	if err := chromedp.Do(within(60*time.Second), chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS(`#conn.live`)), chromedp.WaitVisible(chromedp.CSS(`#pods tbody tr`))); err != nil {
		fail("open "+page, err)
	}

	// Live values: the growing pod's working set as the page shows it,
	// read until it rose by 16 MiB (4 s of allocation) without a reload.
	grow := "default/grow-" + n.node
	wsOf := fmt.Sprintf(`(() => { const r = document.querySelector('#pods tr[data-pod=%q] td.ws'); return r ? Number(r.dataset.bytes) : -1 })()`, grow)
	read := func() float64 {
		t.Helper()
		v, err := chromedp.Run(within(10*time.Second), chromedp.Evaluate[float64](wsOf))
		if err != nil {
			fail("read "+grow, err)
		}
		return v
	}
	first := read()
	now, start := first, time.Now()
	for now < first+16<<20 {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("the page's working set of %s went from %.0f to %.0f bytes in 60 s, want +16 MiB", grow, first, now)
		}
		time.Sleep(500 * time.Millisecond) // the page updates itself every second; this only paces the reads
		now = read()
	}
	t.Logf("live: the page showed %s's working set rise from %.1f to %.1f MiB in %v", grow, first/(1<<20), now/(1<<20),
		time.Since(start).Round(100*time.Millisecond))
	points, err := chromedp.Run(within(10*time.Second), chromedp.Evaluate[int](
		`(() => { const l = document.querySelector('#mem-chart polyline.avail'); return l ? l.getAttribute('points').split(' ').length : 0 })()`))
	if err != nil {
		fail("chart", err)
	}
	if points < 2 {
		t.Errorf("the memory.available chart has %d points, want the history of several snapshots", points)
	}

	// The OOM kill of the "oom" pod appears in the timeline.
	oom := "default/oom-" + n.node
	oomItem := fmt.Sprintf(`//ol[@id="timeline"]/li[@data-kind="OOMKill"][contains(., %q)]`, oom)
	if err := chromedp.Do(within(90*time.Second), chromedp.WaitVisible(chromedp.Search(oomItem))); err != nil {
		fail("OOM kill of "+oom+" in the timeline", err)
	}
	line, err := chromedp.Run(within(10*time.Second), chromedp.Text(chromedp.CSS(`#timeline li[data-kind="OOMKill"]`)))
	if err != nil {
		fail("timeline text", err)
	}
	t.Logf("timeline: %s", line)

	png, err := chromedp.Run(within(30*time.Second), chromedp.FullScreenshot(100))
	if err != nil {
		fail("screenshot", err)
	}
	shot := filepath.Join(artifactDir(t), "dashboard-"+env.RunID()+".png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))

	// No network: every request of the page went to the agent.
	origin := strings.TrimSuffix(n.url(""), "/")
	mu.Lock()
	defer mu.Unlock()
	if len(requested) == 0 {
		t.Fatal("no request was seen: the network listener did not run")
	}
	for _, u := range requested {
		if !strings.HasPrefix(u, origin+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page requested %s, outside the agent's origin %s", u, origin)
		}
	}
	t.Logf("the page made %d requests, all to %s", len(requested), origin)
}

// testDashboardTop runs `kernelet top` in an 80×24 tmux window of a
// private tmux server against the agent's read-only port.
func testDashboardTop(t *testing.T, n *agentNode) {
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	top := filepath.Join(binaries(t), "kernelet") + " top --server " + n.url("")
	if out, err := tmux("new-session", "-d", "-s", "top", "-x", "80", "-y", "24", top); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = tmux("kill-server") })
	// Rows start with the pod's name, cut to the name column (34 cells).
	grow, oom := "default/grow-", "default/oom-"
	var screen string
	// order returns the rows of grow and oom on the screen (-1: absent).
	order := func() (g, o int) {
		g, o = -1, -1
		for i, l := range strings.Split(screen, "\n") {
			switch {
			case strings.HasPrefix(l, grow):
				g = i
			case strings.HasPrefix(l, oom):
				o = i
			}
		}
		return g, o
	}
	capture := func(what string, ok func(g, o int) bool) {
		t.Helper()
		waitFor(t, 30*time.Second, what, func() (bool, error) {
			out, err := tmux("capture-pane", "-p", "-t", "top")
			if err != nil {
				return false, fmt.Errorf("%v: %s", err, out)
			}
			screen = out
			if !ok(order()) {
				return false, fmt.Errorf("the screen is:\n%s", screen)
			}
			return true, nil
		})
	}
	// Sorted by memory: the growing pod (tens of MiB) above the pod that
	// is OOM-killed at 32 MiB and waits in CrashLoopBackOff.
	capture("kernelet top lists both pods, grow first", func(g, o int) bool { return g >= 0 && o > g })
	t.Logf("kernelet top, sorted by memory:\n%s", screen)
	if lines := strings.Split(strings.TrimRight(screen, "\n"), "\n"); len(lines) > 24 {
		t.Errorf("the view has %d lines in a 24-line window", len(lines))
	}
	if !bytes.Contains([]byte(screen), []byte("memory.available")) {
		t.Errorf("no memory.available line:\n%s", screen)
	}
	if out, err := tmux("send-keys", "-t", "top", "o"); err != nil {
		t.Fatalf("send-keys: %v %s", err, out)
	}
	capture("sorted by OOM kills: oom first", func(g, o int) bool { return o >= 0 && g > o && strings.Contains(screen, "sort: oom kills") })
	t.Logf("after the key o:\n%s", screen)
	for _, l := range strings.Split(screen, "\n") {
		if f := strings.Fields(l); strings.HasPrefix(l, oom) && (len(f) == 0 || f[len(f)-1] == "0") {
			t.Errorf("the OOM column of %s does not count its kills: %q", oom, l)
		}
	}
	if out, err := tmux("send-keys", "-t", "top", "q"); err != nil {
		t.Fatalf("send-keys q: %v %s", err, out)
	}
	waitFor(t, 10*time.Second, "kernelet top quits on q", func() (bool, error) {
		_, err := tmux("has-session", "-t", "top")
		return err != nil, nil
	})
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
