package volume

import (
	"os"
	"testing"
)

func TestChmodBits(t *testing.T) {
	for name, tc := range map[string]struct {
		mode os.FileMode
		want uint32
	}{
		"plain":               {0o755, 0o755},
		"directory":           {os.ModeDir | 0o777, 0o777},
		"fsGroup emptyDir":    {os.ModeDir | os.ModeSetgid | 0o777, 0o2777},
		"fsGroup tmpfs":       {os.ModeDir | os.ModeSetgid | os.ModeSticky | 0o777, 0o3777},
		"setuid":              {os.ModeSetuid | 0o755, 0o4755},
		"other type bits off": {os.ModeSymlink | os.ModeAppend | 0o644, 0o644},
	} {
		if got := ChmodBits(tc.mode); got != tc.want {
			t.Errorf("%s: ChmodBits(%v) = %#o, want %#o", name, tc.mode, got, tc.want)
		}
	}
}
