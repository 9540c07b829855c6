package runtime

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// reportedDriverAttempts and reportedDriverRetry: as kubelet, RuntimeConfig
// is asked up to three times, two seconds apart, while the runtime fails
// with anything but Unimplemented.
const (
	reportedDriverAttempts = 3
	reportedDriverRetry    = 2 * time.Second
)

// ReportedCgroupDriver asks the runtime which cgroup driver it uses (CRI
// RuntimeConfig): "systemd" or "cgroupfs"; "" when the runtime does not
// implement RuntimeConfig (containerd 1.6) or reports no Linux
// configuration.
func ReportedCgroupDriver(ctx context.Context, rs internalapi.RuntimeService) (string, error) {
	var err error
	for attempt := range reportedDriverAttempts {
		var resp *runtimeapi.RuntimeConfigResponse
		resp, err = rs.RuntimeConfig(ctx)
		if err == nil {
			return driverName(resp)
		}
		if status.Code(err) == codes.Unimplemented {
			return "", nil
		}
		if attempt+1 < reportedDriverAttempts {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(reportedDriverRetry):
			}
		}
	}
	return "", fmt.Errorf("CRI RuntimeConfig: %w", err)
}

func driverName(resp *runtimeapi.RuntimeConfigResponse) (string, error) {
	lc := resp.GetLinux()
	if lc == nil {
		return "", nil
	}
	switch d := lc.GetCgroupDriver(); d {
	case runtimeapi.CgroupDriver_SYSTEMD:
		return "systemd", nil
	case runtimeapi.CgroupDriver_CGROUPFS:
		return "cgroupfs", nil
	default:
		return "", fmt.Errorf("CRI RuntimeConfig: unknown cgroup driver %v", d)
	}
}
