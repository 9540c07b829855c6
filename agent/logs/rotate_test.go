package logs

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	apitest "k8s.io/cri-api/pkg/apis/testing"
)

func TestPlanRotation(t *testing.T) {
	const log = "/logs/ns_pod_uid/app/0.log"
	now := time.Date(2026, 11, 25, 5, 0, 0, 0, time.UTC)
	r := func(ts string) string { return log + "." + ts }
	p := Policy{MaxSize: 1 << 20, MaxFiles: 3}
	cases := map[string]struct {
		size   int64
		others []string
		policy Policy
		want   Plan
	}{
		"small, nothing beside": {100, nil, p, Plan{}},
		"big, nothing beside":   {2 << 20, nil, p, Plan{RotateTo: r("20261125-050000")}},
		"small, newest rotated stays uncompressed": {100, []string{r("20261125-040000"), r("20261125-030000")}, p,
			Plan{Compress: []string{r("20261125-030000")}}},
		"big: the newest rotated is compressed, the oldest goes": {2 << 20,
			[]string{r("20261125-040000"), r("20261125-030000.gz"), r("20261125-020000.gz")}, p,
			Plan{Remove: []string{r("20261125-020000.gz"), r("20261125-030000.gz")}, Compress: []string{r("20261125-040000")}, RotateTo: r("20261125-050000")}},
		"leftovers": {100, []string{r("20261125-040000"), r("20261125-030000"), r("20261125-030000.gz"), r("20261125-030000.gz.tmp")}, p,
			Plan{Remove: []string{r("20261125-030000"), r("20261125-030000.gz.tmp")}}},
		"other files are not ours": {100, []string{"/logs/ns_pod_uid/app/1.log"}, p, Plan{}},
		"max files 2": {2 << 20, []string{r("20261125-040000")}, Policy{MaxSize: 1 << 20, MaxFiles: 2},
			Plan{Remove: []string{r("20261125-040000")}, RotateTo: r("20261125-050000")}},
		"same second twice: the sub-second name": {2 << 20, []string{r("20261125-050000")}, p,
			Plan{Compress: []string{r("20261125-050000")}, RotateTo: r("20261125-050000.000000000")}},
		"both names taken: no rotation, nothing removed": {2 << 20,
			[]string{r("20261125-050000.000000000"), r("20261125-050000.gz")}, p, Plan{}},
		"sub-second names sort after the second's first": {100,
			[]string{r("20261125-050000.000000000"), r("20261125-050000.gz"), r("20261125-040000.gz")}, p,
			Plan{Remove: []string{r("20261125-040000.gz")}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := PlanRotation(log, tc.size, tc.others, tc.policy, now)
			slices.Sort(got.Remove)
			if !slices.Equal(got.Remove, tc.want.Remove) || !slices.Equal(got.Compress, tc.want.Compress) || got.RotateTo != tc.want.RotateTo {
				t.Errorf("plan %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A rotation against the published fake CRI runtime: the log is renamed,
// reopened (the fake records the call), older rotated files compressed; a
// failed reopen puts the log back.
func TestRotatorApply(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	old := log + ".20261125-040000"
	for f, data := range map[string]string{log: "current\n", old: "older\n"} {
		if err := os.WriteFile(f, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	svc := apitest.NewFakeRuntimeService()
	r := &Rotator{Runtime: svc, Policy: Policy{MaxSize: 1, MaxFiles: 3}, Now: func() time.Time { return time.Date(2026, 11, 25, 5, 0, 0, 0, time.UTC) }}
	plan := PlanRotation(log, 8, []string{old}, r.Policy, r.Now())
	if err := r.apply(context.Background(), "c1", log, plan); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(log + ".20261125-050000"); err != nil {
		t.Errorf("rotated file: %v", err)
	}
	if !slices.Contains(svc.Called, "ReopenContainerLog") {
		t.Errorf("no ReopenContainerLog: %v", svc.Called)
	}
	if err := os.WriteFile(log, []byte("new\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	svc.InjectError("ReopenContainerLog", errors.New("boom"))
	if err := r.apply(context.Background(), "c1", log, Plan{RotateTo: log + ".20261125-050500"}); err == nil {
		t.Error("a failed reopen must be an error")
	}
	if b, err := os.ReadFile(log); err != nil || string(b) != "new\n" {
		t.Errorf("log not rolled back: %q %v", b, err)
	}
	f, err := os.Open(old + ".gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(zr); string(b) != "older\n" {
		t.Errorf("compressed content %q", b)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("uncompressed file stays: %v", err)
	}
}

// Written logs reported by the watch: one over the size is rotated (its
// container found among the running ones), one that no running container
// writes is left to the next full pass (no CRI calls on its next writes).
func TestRotatorCheckWritten(t *testing.T) {
	dir := t.TempDir()
	log, stray := filepath.Join(dir, "0.log"), filepath.Join(dir, "stray.log")
	for _, f := range []string{log, stray} {
		if err := os.WriteFile(f, make([]byte, 100), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	svc := apitest.NewFakeRuntimeService()
	svc.SetFakeContainers([]*apitest.FakeContainer{{ContainerStatus: runtimeapi.ContainerStatus{Id: "c1", LogPath: log,
		State: runtimeapi.ContainerState_CONTAINER_RUNNING, Metadata: &runtimeapi.ContainerMetadata{Name: "app"}}}})
	r := &Rotator{Runtime: svc, Policy: Policy{MaxSize: 10, MaxFiles: 3}}
	ctx := context.Background()
	r.checkSizes(ctx, []string{log, stray})
	if !slices.Contains(svc.Called, "ReopenContainerLog") {
		t.Errorf("no rotation: %v", svc.Called)
	}
	if rotated, _ := filepath.Glob(log + ".*"); len(rotated) != 1 {
		t.Errorf("rotated files: %v", rotated)
	}
	if !r.failed[stray] {
		t.Errorf("the stray log is not left to the full pass: %v", r.failed)
	}
	svc.Called = nil
	r.checkSizes(ctx, []string{stray})
	if len(svc.Called) != 0 {
		t.Errorf("CRI calls for a log no container writes: %v", svc.Called)
	}
}

// What the watch reports: nothing written is no CRI call (a new pod's or
// container's directory), lost events are the check of every log.
func TestRotatorWritten(t *testing.T) {
	svc := apitest.NewFakeRuntimeService()
	r := &Rotator{Runtime: svc, Policy: Policy{MaxSize: 10, MaxFiles: 3}}
	ctx := context.Background()
	r.written(ctx, nil, false)
	if len(svc.Called) != 0 {
		t.Errorf("CRI calls with no log written: %v", svc.Called)
	}
	r.written(ctx, nil, true)
	if !slices.Contains(svc.Called, "ListContainers") {
		t.Errorf("lost events: no list of the running containers: %v", svc.Called)
	}
}
