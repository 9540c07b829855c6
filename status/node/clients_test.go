package node

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestHeartbeatClient(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Query().Get("timeout") != "2s" {
			t.Errorf("request %s: want the heartbeat timeout 2s", r.URL)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n"}}`))
	}))
	defer srv.Close()
	kc := &kubeletv1beta1.KubeletConfiguration{NodeStatusUpdateFrequency: metav1.Duration{Duration: 10 * time.Second},
		NodeLeaseDurationSeconds: 2}
	// A base config throttled to 1 request per second: the heartbeat client is not.
	client, closeIdle, err := HeartbeatClient(&rest.Config{Host: srv.URL, QPS: 1, Burst: 1}, kc)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 20 {
		if _, err := client.Nodes().Get(t.Context(), "n", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 5*time.Second || calls.Load() != 20 {
		t.Errorf("20 requests took %v (%d calls): throttled?", d, calls.Load())
	}
	closeIdle()
}

func TestHeartbeatTimeout(t *testing.T) {
	for _, tc := range []struct {
		update time.Duration
		lease  int32
		want   time.Duration
	}{
		{10 * time.Second, 40, 10 * time.Second},
		{time.Minute, 40, 40 * time.Second},
		{0, 40, 40 * time.Second},
		{10 * time.Second, 0, 10 * time.Second},
	} {
		kc := &kubeletv1beta1.KubeletConfiguration{NodeStatusUpdateFrequency: metav1.Duration{Duration: tc.update}, NodeLeaseDurationSeconds: tc.lease}
		if got := HeartbeatTimeout(kc); got != tc.want {
			t.Errorf("update %v, lease %d s: %v, want %v", tc.update, tc.lease, got, tc.want)
		}
	}
}
