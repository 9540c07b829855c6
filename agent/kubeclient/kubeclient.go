package kubeclient

import (
	"fmt"

	"k8s.io/client-go/rest"

	"k8s.io/client-go/tools/clientcmd"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/internal/clientset"
)

// ContentTypeProtobuf is the content type of the main client's requests;
// the API server answers in JSON for types it cannot encode as protobuf.
const (
	ContentTypeProtobuf = "application/vnd.kubernetes.protobuf"
	acceptProtobuf      = "application/vnd.kubernetes.protobuf,application/json"
)

// UserAgent names kernelet in the API server's audit log and metrics.
const UserAgent = "kernelet"

// Clients are the agent's API server clients.
type Clients struct {
	// Main reads and writes pods, nodes and the objects pods use.
	Main clientset.Interface
	// Events records events.
	Events clientset.Interface
	// Host is the API server's URL.
	Host string
	// Config is the main client's configuration (for informers and
	// other clients of the same identity).
	Config *rest.Config
}

// Load reads the kubeconfig file.
func Load(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig},
		&clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// New builds the main and the event clients (the heartbeat client is
// status/node.HeartbeatClient) from base (see Load) and the defaulted
// configuration's client settings.
func New(base *rest.Config, kc *kubeletv1beta1.KubeletConfiguration) (*Clients, error) {
	main := rest.CopyConfig(base)
	main.UserAgent = UserAgent
	if kc.ContentType != "" {
		main.ContentType = kc.ContentType
	} else {
		main.ContentType = ContentTypeProtobuf
	}
	if main.ContentType == ContentTypeProtobuf {
		main.AcceptContentTypes = acceptProtobuf
	}
	if kc.KubeAPIQPS != nil {
		main.QPS = float32(*kc.KubeAPIQPS)
	}
	main.Burst = int(kc.KubeAPIBurst)

	events := rest.CopyConfig(main)
	if kc.EventRecordQPS != nil {
		events.QPS = float32(*kc.EventRecordQPS)
	}
	events.Burst = int(kc.EventBurst)

	c := &Clients{Host: main.Host, Config: main}
	var err error
	if c.Main, err = clientset.NewForConfig(main); err != nil {
		return nil, fmt.Errorf("api client: %w", err)
	}
	if c.Events, err = clientset.NewForConfig(events); err != nil {
		return nil, fmt.Errorf("event client: %w", err)
	}
	return c, nil
}
