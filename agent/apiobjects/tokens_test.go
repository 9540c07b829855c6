package apiobjects

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	ktesting "k8s.io/client-go/testing"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
)

func TestNeedsRefresh(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		now, expires time.Time
		want         bool
	}{
		"fresh":                 {now: t0.Add(10 * time.Minute), expires: t0.Add(time.Hour), want: false},
		"at 79%":                {now: t0.Add(47 * time.Minute), expires: t0.Add(time.Hour), want: false},
		"past 80%":              {now: t0.Add(49 * time.Minute), expires: t0.Add(time.Hour), want: true},
		"expired":               {now: t0.Add(2 * time.Hour), expires: t0.Add(time.Hour), want: true},
		"a year token, 23h old": {now: t0.Add(23 * time.Hour), expires: t0.Add(365 * 24 * time.Hour), want: false},
		"a year token, 25h old": {now: t0.Add(25 * time.Hour), expires: t0.Add(365 * 24 * time.Hour), want: true},
	}
	for name, tc := range cases {
		if got := NeedsRefresh(tc.now, t0, tc.expires); got != tc.want {
			t.Errorf("%s: NeedsRefresh = %v, want %v", name, got, tc.want)
		}
	}
}

func TestTokenManagerCachesAndRotates(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	calls := 0
	var last *authenticationv1.TokenRequest
	client.PrependReactor("create", "serviceaccounts", func(a ktesting.Action) (bool, kruntime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		calls++
		tr := a.(ktesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		last = tr
		tr.Status.Token = "token-" + string(rune('0'+calls))
		tr.Status.ExpirationTimestamp = metav1.NewTime(clk.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
		return true, tr, nil
	})
	m := NewTokenManager(clientsettest.FromClientset(client), clk)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid1"}}
	ctx := context.Background()
	tok, err := m.Token(ctx, pod, "", 3607)
	if err != nil || tok != "token-1" {
		t.Fatalf("Token = %q, %v", tok, err)
	}
	if ref := last.Spec.BoundObjectRef; ref == nil || ref.Kind != "Pod" || ref.Name != "p" || ref.UID != "uid1" || len(last.Spec.Audiences) != 0 {
		t.Errorf("request = %+v", last.Spec)
	}
	clk.Step(40 * time.Minute)
	if tok, _ = m.Token(ctx, pod, "", 3607); tok != "token-1" || calls != 1 {
		t.Errorf("at 40m: %q after %d calls, want the cached token", tok, calls)
	}
	clk.Step(9 * time.Minute) // 49m > 80% of 3607s
	if tok, _ = m.Token(ctx, pod, "", 3607); tok != "token-2" || calls != 2 {
		t.Errorf("at 49m: %q after %d calls, want a new token", tok, calls)
	}
	if tok, _ = m.Token(ctx, pod, "vault", 3607); tok != "token-3" || last.Spec.Audiences[0] != "vault" {
		t.Errorf("another audience: %q %v", tok, last.Spec.Audiences)
	}
	m.Forget("uid1")
	if tok, _ = m.Token(ctx, pod, "", 3607); tok != "token-4" {
		t.Errorf("after Forget: %q", tok)
	}
}
