package bench

import (
	"testing"
	"time"
)

func TestParseBusy(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	d, err := parseBusy("cpu  1000 20 300 9000 500 7 8 9 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := (1000 + 20 + 300 + 7 + 8 + 9) * 10 * time.Millisecond; d != want {
		t.Errorf("busy %v, want %v (idle and iowait left out)", d, want)
	}
	if _, err := parseBusy("intr 1 2 3\n"); err == nil {
		t.Error("a /proc/stat without its cpu line parsed")
	}
}

func TestParseProcCPU(t *testing.T) {
	// pid (comm with ") " in it) state ppid … utime (14) stime (15) …
	stat := "42 (a) b) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 1000 1000000 500\n"
	if got, want := parseProcCPU([]byte(stat)), 3*time.Second; got != want {
		t.Errorf("CPU %v, want %v", got, want)
	}
	if got := parseProcCPU([]byte("garbage")); got != 0 {
		t.Errorf("CPU of garbage %v, want 0", got)
	}
}
