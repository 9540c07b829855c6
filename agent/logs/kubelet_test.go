package logs

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestNewRotator(t *testing.T) {
	files, workers := int32(3), int32(2)
	kc := &kubeletv1beta1.KubeletConfiguration{ContainerLogMaxSize: "10Mi", ContainerLogMaxFiles: &files,
		ContainerLogMaxWorkers: &workers, ContainerLogMonitorInterval: &metav1.Duration{Duration: 10 * time.Second},
		PodLogsDir: "/var/log/pods"}
	r, err := NewRotator(kc, nil, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if r.Policy.MaxSize != 10<<20 || r.Policy.MaxFiles != 3 || r.Workers != 2 || r.Interval != 10*time.Second ||
		r.LogsDir != "/var/log/pods" || r.SizeCheck != DefaultSizeCheck {
		t.Errorf("rotator %+v", r)
	}
	kc.ContainerLogMaxSize = "ten"
	if _, err := NewRotator(kc, nil, time.Now); err == nil {
		t.Error("a bad containerLogMaxSize gave a rotator")
	}
}
