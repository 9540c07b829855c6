package runtime

import (
	"context"
	"errors"
	"k8s.io/client-go/util/flowcontrol"
	clocktesting "k8s.io/utils/clock/testing"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func eventTexts(r *SyncResult) []string {
	var out []string
	for _, e := range r.Events {
		out = append(out, e.Type+" "+e.Reason+" "+e.Message)
	}
	return out
}

func TestManagerImageReasons(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		image      string
		policy     v1.PullPolicy
		wantReason string
		wantMsg    string
		wantEvents []string
	}{
		{"invalid name", "img//bad:1", v1.PullIfNotPresent, ReasonInvalidImageName,
			`Failed to apply default image tag "img//bad:1": invalid reference format`,
			[]string{`Warning InspectFailed Failed to apply default image tag "img//bad:1": invalid reference format`, "Warning Failed Error: InvalidImageName"}},
		{"never pull", "img:1", v1.PullNever, ReasonErrImageNeverPull,
			`Container image "img:1" is not present with pull policy of Never`,
			[]string{`Warning ErrImageNeverPull Container image "img:1" is not present with pull policy of Never`, "Warning Failed Error: ErrImageNeverPull"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, f, _ := newFakeManager(t)
			pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
			pod.Spec.Containers[0].Image, pod.Spec.Containers[0].ImagePullPolicy = tc.image, tc.policy
			r := m.SyncPod(ctx, pod, nil, SyncOptions{})
			if w := r.Waiting["app"]; w.Reason != tc.wantReason || w.Message != tc.wantMsg {
				t.Errorf("waiting %+v, want %s %q", w, tc.wantReason, tc.wantMsg)
			}
			got := eventTexts(r)
			for _, e := range tc.wantEvents {
				if !slices.Contains(got, e) {
					t.Errorf("event %q missing in %q", e, got)
				}
			}
			if n := f.called("PullImage"); n != 0 {
				t.Errorf("PullImage called %d times", n)
			}
		})
	}
}

func TestManagerPullBackOffEvents(t *testing.T) {
	ctx := context.Background()
	m, f, _ := newFakeManager(t)
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	pod.Spec.Containers[0].ImagePullPolicy = v1.PullIfNotPresent
	f.pullErr = errors.New("registry down")
	r := m.SyncPod(ctx, pod, nil, SyncOptions{})
	if w := r.Waiting["app"]; w.Reason != ReasonErrImagePull || w.Message != "registry down" {
		t.Fatalf("first sync waiting %+v", w)
	}
	want := []string{`Normal Pulling Pulling image "img:1"`, `Warning Failed Failed to pull image "img:1": registry down`, "Warning Failed Error: ErrImagePull"}
	if got := eventTexts(r); !slices.Equal(got, want) {
		t.Errorf("first sync events %q, want %q", got, want)
	}
	r = m.SyncPod(ctx, pod, nil, SyncOptions{})
	if w := r.Waiting["app"]; w.Reason != ReasonImagePullBackOff {
		t.Fatalf("second sync waiting %+v", w)
	}
	want = []string{`Normal BackOff Back-off pulling image "img:1"`, "Warning Failed Error: ImagePullBackOff"}
	if got := eventTexts(r); !slices.Equal(got, want) {
		t.Errorf("second sync events %q, want %q", got, want)
	}
}

func TestPullSlots(t *testing.T) {
	if rel, err := newPullSlots(0).acquire(context.Background()); err != nil {
		t.Fatalf("unbounded: %v", err)
	} else {
		rel()
	}
	s := newPullSlots(1)
	rel, err := s.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Full: a second pull waits; its context ends first.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second acquire on a full slot: %v", err)
	}
	rel()
	rel2, err := s.acquire(context.Background())
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	rel2()
}

func TestPulledMessage(t *testing.T) {
	got := pulledMessage("busybox:1", 1200*time.Millisecond, 3*time.Second, 1024)
	want := `Successfully pulled image "busybox:1" in 1.2s (3s including waiting). Image size: 1024 bytes.`
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestSerializedPulls: with one pull slot (serializeImagePulls) a slow
// pull holds back the next pull, not a pod whose image is present.
func TestSerializedPulls(t *testing.T) {
	ctx := context.Background()
	m, f, _ := newFakeManager(t)
	m.pulls = newPullSlots(1)
	f.slowImage, f.pullStarted, f.release = "slow:1", make(chan struct{}), make(chan struct{})
	f.images["img:1"] = true
	pod := func(uid, image string) *v1.Pod {
		p := testPod(v1.RestartPolicyAlways, nil, nil, "app")
		p.UID, p.Name = types.UID(uid), uid
		p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = image, v1.PullIfNotPresent
		return p
	}
	slowDone := make(chan *SyncResult, 1)
	go func() { slowDone <- m.SyncPod(ctx, pod("slow", "slow:1"), nil, SyncOptions{}) }()
	<-f.pullStarted

	// A pod whose image is present starts while the slow pull runs.
	if r := m.SyncPod(ctx, pod("present", "img:1"), nil, SyncOptions{}); r.Err() != nil || r.Started["app"] == "" {
		t.Fatalf("pod with a present image: %v, started %v", r.Err(), r.Started)
	}
	// Another pull waits for the slot (until its context ends here).
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	r := m.SyncPod(wctx, pod("next", "other:1"), nil, SyncOptions{})
	cancel()
	if err := r.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second pull during the slow one: %v, want it to wait for a pull slot", err)
	}
	close(f.release)
	if r := <-slowDone; r.Err() != nil || r.Started["app"] == "" {
		t.Fatalf("slow pod: %v", r.Err())
	}
	if r := m.SyncPod(ctx, pod("next2", "other:1"), nil, SyncOptions{}); r.Err() != nil {
		t.Errorf("pull after the slow one: %v", r.Err())
	}
}

// registryPullQPS/registryBurst: a pull beyond the rate fails at once with
// kubelet's "pull QPS exceeded" (ErrImagePull), and passes once tokens
// come back.
func TestPullQPS(t *testing.T) {
	ctx := context.Background()
	m, _, _ := newFakeManager(t)
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	m.pullRate = flowcontrol.NewTokenBucketRateLimiterWithClock(1, 1, clk)
	pod := func(uid string) *v1.Pod {
		p := testPod(v1.RestartPolicyAlways, nil, nil, "app")
		p.UID, p.Name = types.UID(uid), uid
		p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = "img:"+uid, v1.PullAlways
		return p
	}
	if r := m.SyncPod(ctx, pod("a"), nil, SyncOptions{}); r.Err() != nil {
		t.Fatalf("first pull: %v", r.Err())
	}
	r := m.SyncPod(ctx, pod("b"), nil, SyncOptions{})
	if err := r.Err(); !errors.Is(err, ErrPullQPSExceeded) || r.Waiting["app"].Reason != ReasonErrImagePull {
		t.Fatalf("second pull at once: %v, waiting %+v; want pull QPS exceeded", err, r.Waiting["app"])
	}
	clk.Step(2 * time.Second)
	if r := m.SyncPod(ctx, pod("c"), nil, SyncOptions{}); r.Err() != nil {
		t.Errorf("pull after the rate recovered: %v", r.Err())
	}
}
