package e2e

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// TestContainerdUpDownCLI runs `testenv containerd up`, which must return
// with containerd and the registry daemon still serving (a pull through the
// mirror works), then `testenv containerd down`, which must stop both and
// remove the state dir.
func TestContainerdUpDownCLI(t *testing.T) {
	containerd.Require(t)
	ctx := t.Context()
	testbox, err := images.TestboxBinary()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "testenv")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/kernelet/kernelet/hack/testenv").CombinedOutput(); err != nil {
		t.Fatalf("build testenv: %v\n%s", err, out)
	}
	name := "containerd-cli-" + strconv.Itoa(os.Getpid())
	sd := env.StateDir(name)
	t.Cleanup(func() {
		if err := containerd.Down(sd); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	testenv := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), env.RunIDEnv+"="+env.RunID())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("testenv %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return string(out)
	}

	t0 := time.Now()
	out := testenv("containerd", "up", "--name", name, "--testbox", testbox)
	upTime := time.Since(t0)
	vars := parseExports(out)
	if vars["CONTAINERD_STATE"] != sd || vars["CONTAINERD_ENDPOINT"] != "unix://"+filepath.Join(sd, "containerd.sock") {
		t.Fatalf("up printed %q", out)
	}
	daemons := map[string]downProc{}
	for _, pf := range []string{"containerd.pid", containerd.RegistryPidFile} {
		b, err := os.ReadFile(filepath.Join(sd, pf))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		st := downStartTime(pid)
		if st == "" {
			t.Fatalf("%s: process %d is not running after up returned", pf, pid)
		}
		daemons[pf] = downProc{pid: pid, start: st}
	}

	is, err := remote.NewRemoteImageServiceBuilder().
		WithEndpoint(vars["CONTAINERD_ENDPOINT"]).
		WithConnectionTimeout(10 * time.Second).
		Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close(ctx)
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: images.MirrorOnlyImage}, nil, nil); err != nil {
		t.Fatalf("pull %s through the registry daemon: %v", images.MirrorOnlyImage, err)
	}

	t1 := time.Now()
	testenv("containerd", "down", "--state", sd)
	downTime := time.Since(t1)
	for pf, p := range daemons {
		if downStartTime(p.pid) == p.start {
			t.Errorf("%s: process %d still running after down", pf, p.pid)
		}
	}
	for _, p := range []string{sd, sd + ".lock"} {
		if downExists(p) {
			t.Errorf("%s left after down", p)
		}
	}
	t.Logf("testenv containerd up returned in %v with containerd %d and registry %d running; down took %v",
		upTime.Round(time.Millisecond), daemons["containerd.pid"].pid, daemons[containerd.RegistryPidFile].pid, downTime.Round(time.Millisecond))
}

// parseExports reads the `export K=V` lines `testenv containerd up` prints.
func parseExports(out string) map[string]string {
	vars := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "="); ok {
			vars[k] = v
		}
	}
	return vars
}
