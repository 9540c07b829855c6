package eviction

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// recordedSamples reads a recorded sequence (testdata/pagecache): blocks
// "# t=N" of memory.stat keys and a PSI "some" line, one per second.
func recordedSamples(t *testing.T, name string) []FileSample {
	t.Helper()
	f, err := os.Open("testdata/pagecache/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	var out []FileSample
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# t="); ok {
			n, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, FileSample{Time: t0.Add(time.Duration(n) * time.Second)})
			continue
		}
		if len(out) == 0 || strings.HasPrefix(line, "#") {
			continue
		}
		s := &out[len(out)-1]
		fields := strings.Fields(line)
		if fields[0] == "some" {
			v, err := strconv.ParseFloat(strings.TrimPrefix(fields[1], "avg10="), 64)
			if err != nil {
				t.Fatal(err)
			}
			s.PSI = PSIValue{Known: true, Avg10: v}
			continue
		}
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		switch strings.TrimPrefix(fields[0], "total_") {
		case "active_file":
			s.ActiveFile = int64(v)
		case "workingset_refault_file", "workingset_activate_file":
			s.Refaults = v
		}
	}
	return out
}

// The recorded cgroup v1 sequences: a memcg (256 MiB) whose process
// re-reads a file that fits (all of it active, no refaults: kubelet's
// working set counts it, the refaults mode does not), writes a file once
// (inactive only: nothing to discount), and re-reads one that does not
// fit (refaults at ~160 k/s with memory stall: the active pages count),
// and one that nearly fits (470 MiB beside 40 MiB of anon in 512 MiB:
// most of it turns active, yet it refaults at ~250 k/s with the stall
// rising to 20 %: counted).
func TestPageCacheRecorded(t *testing.T) {
	for _, tc := range []struct {
		file string
		// at is the sample checked; reclaimable its expected verdict.
		at          int
		reclaimable bool
		why         string
	}{
		{"reread-v1.txt", 11, true, "not refaulting"},
		{"activethrash-v1.txt", 11, true, "not refaulting"},
		{"writeonce-v1.txt", 11, true, "not refaulting"},
		{"thrash-v1.txt", 6, true, "without memory stall"},
		{"thrash-v1.txt", 11, false, "with memory stall: used"},
		{"tight-v1.txt", 4, true, "not refaulting"},
		{"tight-v1.txt", 11, false, "with memory stall: used"},
	} {
		t.Run(tc.file+"@"+strconv.Itoa(tc.at), func(t *testing.T) {
			seq := recordedSamples(t, tc.file)
			tr := PageCacheTracker{Policy: DefaultPageCachePolicy}
			first := tr.Observe(seq[0])
			if first.Known || first.Reclaimable != 0 {
				t.Errorf("first sample %+v: active file must count until a rate is known", first)
			}
			var v PageCacheVerdict
			for _, s := range seq[1 : tc.at+1] {
				v = tr.Observe(s)
			}
			s := seq[tc.at]
			if !v.Known || (v.Reclaimable == s.ActiveFile) != tc.reclaimable || (!tc.reclaimable && v.Reclaimable != 0) ||
				!strings.Contains(v.Why, tc.why) {
				t.Errorf("verdict %+v (active file %d), want reclaimable %v (%s)", v, s.ActiveFile, tc.reclaimable, tc.why)
			}
			if tc.file == "activethrash-v1.txt" && s.ActiveFile < 200<<20 {
				t.Errorf("recording: active file %d, want the re-read file's 235 MiB", s.ActiveFile)
			}
		})
	}
}

// A v2 memcg counts workingset_activate_file; the rate is taken over the
// window, a counter that goes back restarts it, a repeated time keeps the
// last verdict, and a memcg without PSI is confirmed by refaults alone.
func TestPageCacheTracker(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	at := func(sec float64, refaults uint64, psi PSIValue) FileSample {
		return FileSample{Time: t0.Add(time.Duration(sec * float64(time.Second))), ActiveFile: 300 << 20, Refaults: refaults, PSI: psi}
	}
	noPSI := PSIValue{}
	tr := PageCacheTracker{Policy: DefaultPageCachePolicy}
	steps := []struct {
		s           FileSample
		known       bool
		reclaimable int64
	}{
		{at(0, 1000, noPSI), false, 0},
		{at(0.5, 1000, noPSI), false, 0},                                    // under MinSpan: still counts
		{at(1, 1000, noPSI), true, 300 << 20},                               // 0/s
		{at(1, 9000, noPSI), true, 300 << 20},                               // same time: last verdict
		{at(2, 2000, noPSI), true, 300 << 20},                               // 1000 in 2 s = 500/s ≥ 256/s, no PSI: counts
		{at(12, 2000, noPSI), true, 300 << 20},                              // window moved: 0/s over the last 10 s
		{at(13, 10, noPSI), false, 300 << 20},                               // counter went back: restart, last verdict forgotten
		{at(14, 5010, noPSI), true, 0},                                      // 5000/s, no PSI: refaults alone confirm
		{at(15, 10010, PSIValue{Known: true, Avg10: 0.5}), true, 300 << 20}, // PSI below 1 %: reclaimable
	}
	for i, st := range steps {
		v := tr.Observe(st.s)
		if i == 4 {
			if v.Reclaimable != 0 || v.RefaultRate != 500 {
				t.Errorf("step %d: %+v, want 500/s counted (no PSI)", i, v)
			}
			continue
		}
		if i == 6 {
			if v.Known || v.Reclaimable != 0 {
				t.Errorf("step %d (restart): %+v", i, v)
			}
			continue
		}
		if v.Known != st.known || v.Reclaimable != st.reclaimable {
			t.Errorf("step %d: %+v, want known %v reclaimable %d", i, v, st.known, st.reclaimable)
		}
	}
}
