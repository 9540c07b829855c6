package pressure

import (
	"testing"

	"github.com/kernelet/kernelet/cgroups"
)

func TestKubepodsCapacity(t *testing.T) {
	limited := cgroups.Value{V: 512 << 20, Known: true}
	unlimited := cgroups.Value{V: cgroups.Unlimited, Known: true}
	v1Unlimited := cgroups.Value{V: 9223372036854771712, Known: true} // v1's "no limit"
	for _, tc := range []struct {
		limit cgroups.Value
		node  int64
		want  int64
	}{
		{limited, 8 << 30, 512 << 20},
		{limited, 0, 512 << 20},
		{unlimited, 8 << 30, 1 << 30},
		{v1Unlimited, 8 << 30, 1 << 30},
		{cgroups.Value{}, 8 << 30, 1 << 30},
	} {
		if got := KubepodsCapacity(tc.limit, tc.node, 1<<30); got != tc.want {
			t.Errorf("KubepodsCapacity(%v, %d) = %d, want %d", tc.limit, tc.node, got, tc.want)
		}
	}
}
