package pressure

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
)

const procSwapsBoth = `Filename				Type		Size		Used		Priority
/swapfile                               file		1048572		0		-2
/dev/zram0                              partition	1048572		0		100
/dev/vdb2                               partition	524284		0		-3
`

func TestAsyncSwap(t *testing.T) {
	if got := asyncSwap(procSwapsBoth); !slices.Equal(got, []string{"/swapfile", "/dev/vdb2"}) {
		t.Errorf("asyncSwap = %q, want the file and the disk partition, not zram", got)
	}
	if got := asyncSwap("Filename\tType\tSize\tUsed\tPriority\n"); got != nil {
		t.Errorf("no swap: %q", got)
	}
}

func TestAdviseSwap(t *testing.T) {
	logged := func(swaps, zswap string) string {
		var b strings.Builder
		ctx := klog.NewContext(context.Background(), funcr.New(func(prefix, args string) { b.WriteString(args + "\n") }, funcr.Options{}))
		adviseSwap(ctx, swaps, zswap)
		return b.String()
	}
	if got := logged(procSwapsBoth, "N\n"); !strings.Contains(got, "written back asynchronously") || !strings.Contains(got, `"devices"=["/swapfile" "/dev/vdb2"]`) {
		t.Errorf("a swap file, zswap off: logged %q", got)
	}
	for name, c := range map[string][2]string{
		"zswap on":  {procSwapsBoth, "Y\n"},
		"zram only": {"Filename Type Size Used Priority\n/dev/zram0 partition 1048572 0 100\n", ""},
		"no swap":   {"Filename Type Size Used Priority\n", "N"},
	} {
		if got := logged(c[0], c[1]); got != "" {
			t.Errorf("%s: logged %q, want nothing", name, got)
		}
	}
}
