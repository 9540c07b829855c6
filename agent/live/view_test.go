package live

import (
	"context"
	"errors"
	"testing"
)

func TestViewSnapshotCache(t *testing.T) {
	reads := 0
	var fail error
	v := NewView(func(context.Context) (SnapshotInput, error) {
		reads++
		return SnapshotInput{NodeName: "n1"}, fail
	})
	for range 3 {
		s, err := v.Snapshot(t.Context())
		if err != nil || s.NodeName != "n1" {
			t.Fatalf("snapshot %+v, %v", s, err)
		}
	}
	if reads != 1 {
		t.Errorf("%d reads within CacheFor, want 1", reads)
	}
	v.lastAt = v.lastAt.Add(-CacheFor)
	fail = errors.New("no cgroups")
	if _, err := v.Snapshot(t.Context()); err == nil || reads != 2 {
		t.Errorf("an old snapshot is read again: err %v after %d reads", err, reads)
	}
}

func TestViewForgetGone(t *testing.T) {
	v := NewView(nil)
	v.OOMs.Add("u1")
	v.OOMs.Add("u2")
	v.ForgetGone(map[string]bool{"u2": true})
	if v.OOMs.Count("u1") != 0 || v.OOMs.Count("u2") != 1 {
		t.Errorf("counts u1 %d u2 %d, want 0 and 1", v.OOMs.Count("u1"), v.OOMs.Count("u2"))
	}
}
