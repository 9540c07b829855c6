package logs

import (
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/internal/quantity"
)

// DefaultSizeCheck is the SizeCheck of NewRotator: how often the running
// containers' log sizes are checked between the full passes of
// containerLogMonitorInterval when the logs cannot be watched (no
// inotify).
const DefaultSizeCheck = 250 * time.Millisecond

// NewRotator is the rotator of kc's containerLogMaxSize,
// containerLogMaxFiles, containerLogMonitorInterval, containerLogMaxWorkers
// and podLogsDir (defaults set) over rs; the error is containerLogMaxSize's.
func NewRotator(kc *kubeletv1beta1.KubeletConfiguration, rs internalapi.RuntimeService, now func() time.Time) (*Rotator, error) {
	size, err := quantity.Parse(kc.ContainerLogMaxSize) // validated at load
	if err != nil {
		return nil, err
	}
	return &Rotator{Runtime: rs, Policy: Policy{MaxSize: size.Value(), MaxFiles: int(*kc.ContainerLogMaxFiles)},
		Interval: kc.ContainerLogMonitorInterval.Duration, Workers: int(*kc.ContainerLogMaxWorkers),
		LogsDir: kc.PodLogsDir, SizeCheck: DefaultSizeCheck, Now: now}, nil
}
