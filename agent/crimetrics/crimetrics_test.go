package crimetrics

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	apitest "k8s.io/cri-api/pkg/apis/testing"
)

func TestWrapRecordsOperationsAndErrors(t *testing.T) {
	ctx := context.Background()
	frs, fis := apitest.NewFakeRuntimeService(), apitest.NewFakeImageService()
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	rs, is := Wrap(frs, fis, m)
	if _, err := rs.ListPodSandbox(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.ListPodSandbox(ctx, nil); err != nil {
		t.Fatal(err)
	}
	frs.InjectError("StopContainer", errors.New("boom"))
	if err := rs.StopContainer(ctx, "c1", 1); err == nil {
		t.Fatal("the injected error did not pass through")
	}
	if _, err := is.ListImages(ctx, &runtimeapi.ImageFilter{}); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP kubelet_runtime_operations_errors_total Cumulative number of runtime operation errors by operation type.
# TYPE kubelet_runtime_operations_errors_total counter
kubelet_runtime_operations_errors_total{operation_type="stop_container"} 1
# HELP kubelet_runtime_operations_total Cumulative number of runtime operations by operation type.
# TYPE kubelet_runtime_operations_total counter
kubelet_runtime_operations_total{operation_type="list_images"} 1
kubelet_runtime_operations_total{operation_type="list_podsandbox"} 2
kubelet_runtime_operations_total{operation_type="stop_container"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_runtime_operations_total",
		"kubelet_runtime_operations_errors_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.duration, "kubelet_runtime_operations_duration_seconds"); n != 3 {
		t.Errorf("duration series = %d, want 3", n)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	// The churn counts the stop (failed or not), not the lists.
	if n := m.Mutations(); n != 1 {
		t.Errorf("mutations = %d, want 1 (the StopContainer)", n)
	}
}

func TestPullsObserved(t *testing.T) {
	ctx := context.Background()
	m := NewMetrics()
	var got []types.UID
	m.ObservePulls(func(pod types.UID, start, end time.Time) {
		if end.Before(start) {
			t.Errorf("pull of %s ends before it starts", pod)
		}
		got = append(got, pod)
	})
	_, is := Wrap(nil, apitest.NewFakeImageService(), m)
	img := &runtimeapi.ImageSpec{Image: "busybox"}
	if _, err := is.PullImage(ctx, img, nil, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Uid: "u1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := is.PullImage(ctx, img, nil, nil); err != nil { // no pod: not reported
		t.Fatal(err)
	}
	if !slices.Equal(got, []types.UID{"u1"}) {
		t.Errorf("pulls reported for %v, want [u1]", got)
	}
}
