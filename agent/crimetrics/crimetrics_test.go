package crimetrics

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	apitest "k8s.io/cri-api/pkg/apis/testing"
)

func TestWrapRecordsOperationsAndErrors(t *testing.T) {
	ctx := context.Background()
	frs, fis := apitest.NewFakeRuntimeService(), apitest.NewFakeImageService()
	m := NewMetrics()
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
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), "kubelet_runtime_operations_total",
		"kubelet_runtime_operations_errors_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m, "kubelet_runtime_operations_duration_seconds"); n != 3 {
		t.Errorf("duration series = %d, want 3", n)
	}
	if problems, err := testutil.CollectAndLint(m); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
