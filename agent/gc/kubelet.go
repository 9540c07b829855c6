package gc

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// CollectorsConfig is what NewCollectors builds both collectors from.
type CollectorsConfig struct {
	// Kubelet gives podLogsDir and the image policy (imageGC*Percent,
	// imageMinimumGCAge, imageMaximumGCAge; defaults set).
	Kubelet *kubeletv1beta1.KubeletConfiguration
	// ContainerPolicy is the container policy; nil: DefaultContainerPolicy.
	ContainerPolicy *ContainerPolicy
	Runtime         internalapi.RuntimeService
	Images          internalapi.ImageManagerService
	PodState        PodStateFunc
	PodImages       func() []string
	Recorder        record.EventRecorder
	Node            *v1.ObjectReference
	// Metrics are the image collector's (NewImageGCMetrics).
	Metrics *ImageGCMetrics
}

// NewCollectors builds the container and the image collector of a node
// configured by cfg.
func NewCollectors(cfg CollectorsConfig) (*ContainerGC, *ImageGC, error) {
	kc := cfg.Kubelet
	pol := DefaultContainerPolicy()
	if cfg.ContainerPolicy != nil {
		pol = *cfg.ContainerPolicy
	}
	cgc, err := NewContainerGC(ContainerGCConfig{Runtime: cfg.Runtime, Policy: pol, PodState: cfg.PodState,
		PodLogsDir: kc.PodLogsDir, Recorder: cfg.Recorder, Node: cfg.Node})
	if err != nil {
		return nil, nil, err
	}
	igc, err := NewImageGC(ImageGCConfig{Images: cfg.Images, Runtime: cfg.Runtime, Recorder: cfg.Recorder, Node: cfg.Node,
		PodImages: cfg.PodImages, Metrics: cfg.Metrics,
		Policy: ImagePolicy{HighThresholdPercent: int(*kc.ImageGCHighThresholdPercent),
			LowThresholdPercent: int(*kc.ImageGCLowThresholdPercent),
			MinAge:              kc.ImageMinimumGCAge.Duration, MaxAge: kc.ImageMaximumGCAge.Duration}})
	if err != nil {
		return nil, nil, err
	}
	return cgc, igc, nil
}
