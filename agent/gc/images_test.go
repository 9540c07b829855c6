package gc

import (
	"slices"
	"testing"
	"time"
)

func recIDs(rs []ImageRecord) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func TestImageEvictionOrder(t *testing.T) {
	recs := []ImageRecord{
		{ID: "used", InUse: true},
		{ID: "pinned", Pinned: true},
		{ID: "recent", LastUsed: t0.Add(-time.Minute), FirstDetected: t0.Add(-time.Hour)},
		{ID: "never-late", FirstDetected: t0.Add(-time.Minute)},
		{ID: "never-early", FirstDetected: t0.Add(-time.Hour)},
		{ID: "old", LastUsed: t0.Add(-time.Hour), FirstDetected: t0.Add(-2 * time.Hour)},
	}
	want := []string{"never-early", "never-late", "old", "recent"}
	if got := recIDs(ImageEvictionOrder(recs)); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestOldImages(t *testing.T) {
	cands := []ImageRecord{
		{ID: "stale", LastUsed: t0.Add(-3 * time.Hour)},
		{ID: "fresh", LastUsed: t0.Add(-10 * time.Minute)},
	}
	cases := map[string]struct {
		pol     ImagePolicy
		began   time.Time
		wantOld []string
	}{
		"no max age":                       {pol: ImagePolicy{}, began: t0.Add(-24 * time.Hour)},
		"collector younger than max age":   {pol: ImagePolicy{MaxAge: time.Hour}, began: t0.Add(-time.Hour)},
		"unused for longer than max age":   {pol: ImagePolicy{MaxAge: time.Hour}, began: t0.Add(-2 * time.Hour), wantOld: []string{"stale"}},
		"everything older than a tiny age": {pol: ImagePolicy{MaxAge: time.Minute}, began: t0.Add(-2 * time.Hour), wantOld: []string{"stale", "fresh"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old, rest := OldImages(cands, tc.pol, t0, tc.began)
			if got := recIDs(old); !slices.Equal(got, tc.wantOld) {
				t.Errorf("old: got %v, want %v", got, tc.wantOld)
			}
			if len(old)+len(rest) != len(cands) {
				t.Errorf("old %d + rest %d != %d", len(old), len(rest), len(cands))
			}
		})
	}
}

func TestImageFsUsageOf(t *testing.T) {
	pol := ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80}
	cases := map[string]struct {
		capacity, available int64
		want                ImageFsUsage
		wantErr             bool
	}{
		"under":             {capacity: 1000, available: 200, want: ImageFsUsage{CapacityBytes: 1000, AvailableBytes: 200, UsagePercent: 80}},
		"at high threshold": {capacity: 1000, available: 150, want: ImageFsUsage{CapacityBytes: 1000, AvailableBytes: 150, UsagePercent: 85, Over: true, BytesToFree: 50}},
		"full":              {capacity: 1000, available: 0, want: ImageFsUsage{CapacityBytes: 1000, UsagePercent: 100, Over: true, BytesToFree: 200}},
		"available capped":  {capacity: 1000, available: 5000, want: ImageFsUsage{CapacityBytes: 1000, AvailableBytes: 1000, UsagePercent: 0}},
		"rounding as kubelet": {capacity: 3, available: 1,
			want: ImageFsUsage{CapacityBytes: 3, AvailableBytes: 1, UsagePercent: 67}},
		"no capacity": {capacity: 0, available: 0, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ImageFsUsageOf(tc.capacity, tc.available, pol)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v", err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFreeCandidates(t *testing.T) {
	cands := []ImageRecord{{ID: "new", FirstDetected: t0.Add(-time.Minute)}, {ID: "old", FirstDetected: t0.Add(-time.Hour)}}
	if got := recIDs(FreeCandidates(cands, ImagePolicy{MinAge: 2 * time.Minute}, t0)); !slices.Equal(got, []string{"old"}) {
		t.Errorf("got %v", got)
	}
	if got := recIDs(FreeCandidates(cands, ImagePolicy{}, t0)); !slices.Equal(got, []string{"new", "old"}) {
		t.Errorf("min age 0: got %v", got)
	}
}

func TestFreeDiskSpaceFailedMessage(t *testing.T) {
	got := FreeDiskSpaceFailedMessage(92, 20*1024*1024*1024+512*1024*1024, 1234)
	want := "Insufficient free disk space on the node's image filesystem (92% of 20.5 GiB used). " +
		"Failed to free sufficient space by deleting unused images (freed 1234 bytes). " +
		"Investigate disk usage, as it could be used by active images, logs, volumes, or other data."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	for n, want := range map[int64]string{512: "512 B", 1536: "1.5 KiB", 3 << 20: "3.0 MiB", 5 << 40: "5.0 TiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
