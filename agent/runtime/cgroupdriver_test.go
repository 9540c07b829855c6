package runtime

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	apitest "k8s.io/cri-api/pkg/apis/testing"
)

func TestReportedCgroupDriver(t *testing.T) {
	for name, tc := range map[string]struct {
		linux *runtimeapi.LinuxRuntimeConfiguration
		err   error
		want  string
	}{
		"systemd":                {linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: runtimeapi.CgroupDriver_SYSTEMD}, want: "systemd"},
		"cgroupfs":               {linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS}, want: "cgroupfs"},
		"no linux configuration": {want: ""},
		"unimplemented (cd 1.6)": {err: status.Error(codes.Unimplemented, "unknown method RuntimeConfig"), want: ""},
	} {
		t.Run(name, func(t *testing.T) {
			rs := apitest.NewFakeRuntimeService()
			rs.FakeLinuxConfiguration = tc.linux
			if tc.err != nil {
				rs.InjectError("RuntimeConfig", tc.err)
			}
			got, err := ReportedCgroupDriver(t.Context(), rs)
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	// Another error is retried (two seconds apart, as kubelet), and given
	// up on with the runtime's error when the context ends.
	rs := apitest.NewFakeRuntimeService()
	rs.InjectError("RuntimeConfig", status.Error(codes.Unavailable, "starting"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := ReportedCgroupDriver(ctx, rs); !errors.Is(err, context.Canceled) {
		t.Fatalf("a failing runtime with the context done: %v", err)
	}
}
