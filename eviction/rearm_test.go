package eviction

import (
	"slices"
	"testing"
)

func TestUsageThresholds(t *testing.T) {
	cases := map[string]struct {
		capacity, q, inactive int64
		want                  []uint64
	}{
		"no page cache":       {512 * mi, 64 * mi, 0, []uint64{448 * mi, 384 * mi}},
		"page cache moves it": {512 * mi, 64 * mi, 100 * mi, []uint64{548 * mi, 484 * mi}},
		"huge threshold":      {100 * mi, 64 * mi, 0, []uint64{36 * mi}},
		"threshold zero":      {100 * mi, 0, 0, []uint64{100 * mi}},
	}
	for name, tc := range cases {
		if got := UsageThresholds(tc.capacity, tc.q, tc.inactive); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

func TestNeedsRearm(t *testing.T) {
	armed := []uint64{448 * mi, 384 * mi}
	if NeedsRearm(armed, []uint64{448*mi + 4096, 384*mi - 4096}) {
		t.Error("page-sized movement re-arms")
	}
	if !NeedsRearm(armed, []uint64{450 * mi, 386 * mi}) {
		t.Error("2 MiB of page cache does not re-arm")
	}
	if !NeedsRearm(armed, armed[:1]) || !NeedsRearm(nil, armed) {
		t.Error("a different number of thresholds does not re-arm")
	}
}
