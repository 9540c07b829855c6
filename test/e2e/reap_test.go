package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	remote "k8s.io/cri-client/pkg"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// A run killed without its teardown (its test binary SIGKILLed) leaves a
// containerd, its registry daemon, a pod's bridge link and its state dir
// behind. `testenv reap`, which make test runs first, removes them once the
// run's owner locks are free, and leaves a run with a live owner alone
// (issue 15 #11).
func TestReapKilledRun(t *testing.T) {
	containerd.Require(t)
	ctx := t.Context()
	bin := binaries(t)
	run := env.RunID() + "r"
	runDir := filepath.Join(env.StateBase(), run)
	sd := filepath.Join(runDir, containerd.DefaultName)
	parent := cgroupfs.PodParent(t, "reap", 256<<20)
	t.Cleanup(func() {
		if err := containerd.Down(sd); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		_ = os.RemoveAll(runDir)
	})
	testenv := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "testenv"), args...)
		cmd.Env = append(os.Environ(), env.RunIDEnv+"="+run)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("testenv %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	// The "test binary" of that run: this test holds its owner lock.
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	owner, err := os.OpenFile(filepath.Join(runDir, env.OwnerLockPrefix+"1.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if err := unix.Flock(int(owner.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	out := testenv("containerd", "up", "--testbox", filepath.Join(bin, "testbox"))
	t.Logf("containerd up took %v", time.Since(t0).Round(time.Millisecond))
	vars := parseExports(out)
	if vars["CONTAINERD_STATE"] != sd {
		t.Fatalf("containerd up printed %q", out)
	}
	daemons := map[string]downProc{}
	for _, pf := range []string{"containerd.pid", containerd.RegistryPidFile} {
		b, err := os.ReadFile(filepath.Join(sd, pf))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		daemons[pf] = downProc{pid: pid, start: downStartTime(pid)}
	}
	// A pod on the run's bridge, so that a link is left too.
	rs, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(vars["CONTAINERD_ENDPOINT"]).
		WithConnectionTimeout(10 * time.Second).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close(context.Background())
	if _, err := rs.RunPodSandbox(ctx, criPodConfig("reaped", parent, false, ""), ""); err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	bridge := stateBridge(t, sd)
	if !downExists(filepath.Join("/sys/class/net", bridge)) {
		t.Fatalf("no bridge %s after a pod ran", bridge)
	}

	// While the owner lives, reap leaves the run alone.
	if out := testenv("reap"); strings.Contains(out, run+":") {
		t.Fatalf("reap touched a run with a live owner:\n%s", out)
	}
	for pf, p := range daemons {
		if downStartTime(p.pid) != p.start {
			t.Fatalf("%s: process %d gone while its run's owner lives", pf, p.pid)
		}
	}

	// The owner dies (its lock is released as by SIGKILL): reap removes all.
	owner.Close()
	t1 := time.Now()
	out = testenv("reap")
	t.Logf("reap took %v", time.Since(t1).Round(time.Millisecond))
	if !strings.Contains(out, "reap: run "+run+": its owners are gone; removing containerd "+containerd.DefaultName) {
		t.Errorf("reap did not say what it removed:\n%s", out)
	}
	for pf, p := range daemons {
		if downStartTime(p.pid) == p.start {
			t.Errorf("%s: process %d still running after reap", pf, p.pid)
		}
	}
	for _, p := range []string{sd, runDir, filepath.Join("/sys/class/net", bridge)} {
		if downExists(p) {
			t.Errorf("%s left after reap", p)
		}
	}
	t.Logf("reap said:\n%s", out)
}

// stateBridge reads the bridge name from a test containerd's state file.
func stateBridge(t *testing.T, sd string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sd, "kernelet-env.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Network struct {
			Bridge string `json:"bridge"`
		} `json:"network"`
	}
	if err := json.Unmarshal(b, &st); err != nil || st.Network.Bridge == "" {
		t.Fatalf("state file %s: %v %s", sd, err, b)
	}
	return st.Network.Bridge
}
