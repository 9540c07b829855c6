package node

import (
	"fmt"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/internal/clientset"
)

// HeartbeatClient builds the heartbeat clientset (Config.HeartbeatClient)
// from the agent's REST configuration as kubelet builds its own: no
// client-side rate limit (a heartbeat must not queue behind pod traffic)
// and a timeout of min(nodeLeaseDurationSeconds,
// nodeStatusUpdateFrequency). closeIdle closes its idle connections; pass
// it as Config.OnRepeatedHeartbeatFailure so that a connection the network
// silently dropped is not reused.
func HeartbeatClient(base *rest.Config, kc *kubeletv1beta1.KubeletConfiguration) (client clientset.Interface, closeIdle func(), err error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	cfg.Timeout = HeartbeatTimeout(kc)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("heartbeat HTTP client: %w", err)
	}
	cs, err := clientset.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, nil, fmt.Errorf("heartbeat client: %w", err)
	}
	return cs, func() { utilnet.CloseIdleConnectionsFor(hc.Transport) }, nil
}

// HeartbeatTimeout bounds one heartbeat call (node status or Lease):
// min(nodeLeaseDurationSeconds, nodeStatusUpdateFrequency), as kubelet;
// a value that is not positive is left out.
func HeartbeatTimeout(kc *kubeletv1beta1.KubeletConfiguration) time.Duration {
	d := kc.NodeStatusUpdateFrequency.Duration
	if lease := time.Duration(kc.NodeLeaseDurationSeconds) * time.Second; lease > 0 && (d <= 0 || lease < d) {
		d = lease
	}
	return d
}
