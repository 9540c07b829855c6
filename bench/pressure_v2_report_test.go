package bench

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Lines of containerd's journal (logfmt: quotes escaped) that name a
// pod's sandbox and container and the CRI stops.
var (
	journalSandbox   = regexp.MustCompile(`RunPodSandbox for .*uid:\\"([0-9a-f-]+)\\".* returns sandbox id \\"([0-9a-f]{64})`)
	journalContainer = regexp.MustCompile(`CreateContainer within sandbox \\"([0-9a-f]{64})\\" for .* returns container id \\"([0-9a-f]{64})`)
	journalStop      = regexp.MustCompile(`(StopContainer|StopPodSandbox) for \\"([0-9a-f]{64})`)
	kernelOOMKill    = regexp.MustCompile(`oom-kill:.*oom_memcg=([^,]*),task_memcg=([^,]*),`)
)

// guestTime parses a guest timestamp in seconds ("1732900000.123456").
func guestTime(s string) (time.Time, bool) {
	sec, frac, _ := strings.Cut(strings.TrimSpace(s), ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || n <= 0 || len(frac) > 9 {
		return time.Time{}, false
	}
	var ns int64
	if frac != "" {
		if ns, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return time.Time{}, false
		}
	}
	return time.Unix(n, ns), true
}

// parseStops is stops' pure part: journal lines "<unix time> <host>
// <unit>: <message>". first is each pod's (UID's) first StopContainer or
// StopPodSandbox; containers holds the pods a container of which was
// stopped (an agent stops running containers only, so a pod whose
// container ended by itself has its sandbox stopped and nothing else).
func parseStops(journal string) (first map[string]time.Time, containers map[string]bool) {
	owner := map[string]string{} // sandbox or container id → pod UID
	first, containers = map[string]time.Time{}, map[string]bool{}
	for line := range strings.Lines(journal) {
		ts, _, _ := strings.Cut(line, " ")
		t, ok := guestTime(ts)
		if !ok {
			continue
		}
		if m := journalSandbox.FindStringSubmatch(line); m != nil {
			owner[m[2]] = m[1]
		} else if m := journalContainer.FindStringSubmatch(line); m != nil {
			owner[m[2]] = owner[m[1]]
		} else if m := journalStop.FindStringSubmatch(line); m != nil {
			uid := owner[m[2]]
			if uid == "" {
				continue
			}
			if first[uid].IsZero() || t.Before(first[uid]) {
				first[uid] = t
			}
			if m[1] == "StopContainer" {
				containers[uid] = true
			}
		}
	}
	return first, containers
}

// parseFirstOOM is the first kernel OOM kill in the journal lines
// ("<unix time> <host> kernel: oom-kill:…") whose OOM memcg or task memcg
// is cgroup or below, and its line (zero time: none).
func parseFirstOOM(journal, cgroup string) (time.Time, string) {
	for line := range strings.Lines(journal) {
		m := kernelOOMKill.FindStringSubmatch(line)
		ts, _, _ := strings.Cut(line, " ")
		if t, ok := guestTime(ts); ok && m != nil && (under(m[1], cgroup) || under(m[2], cgroup)) {
			return t, strings.TrimSpace(line)
		}
	}
	return time.Time{}, ""
}

// containerd 2.4's journal lines in the v2 node (trimmed ids).
const pressureV2Journal = `1795978108.701755 n containerd[182]: time="x" level=info msg="RunPodSandbox for name:\"p-0\"  uid:\"3f1bfdd5-6aa3\"  namespace:\"ns\""
1795978113.923246 n containerd[182]: time="x" level=info msg="RunPodSandbox for name:\"p-0\"  uid:\"3f1bfdd5-6aa3\"  namespace:\"ns\" returns sandbox id \"711a19b88392b1e31622c9a49f4eb9ab8ccf3469666c0def8e0becd2044a09ef\""
1795978114.194302 n containerd[182]: time="x" level=info msg="CreateContainer within sandbox \"711a19b88392b1e31622c9a49f4eb9ab8ccf3469666c0def8e0becd2044a09ef\" for container name:\"app\""
1795978114.980288 n containerd[182]: time="x" level=info msg="CreateContainer within sandbox \"711a19b88392b1e31622c9a49f4eb9ab8ccf3469666c0def8e0becd2044a09ef\" for name:\"app\" returns container id \"91d966aa7e97b03168c5be137ce7d0a65418576b9eac4482726ac6ce5f982ff9\""
1795978120.000000 n containerd[182]: time="x" level=info msg="RunPodSandbox for name:\"q-0\"  uid:\"aaaa-bbbb\"  namespace:\"ns\" returns sandbox id \"0a26557b245249522e404e1a97db2295b735de5c2b7b8c569984f242d2ac6730\""
1795978127.300440 n containerd[182]: time="x" level=info msg="StopContainer for \"91d966aa7e97b03168c5be137ce7d0a65418576b9eac4482726ac6ce5f982ff9\" with timeout 1 (s)"
1795978131.316499 n containerd[182]: time="x" level=info msg="StopContainer for \"91d966aa7e97b03168c5be137ce7d0a65418576b9eac4482726ac6ce5f982ff9\" returns successfully"
1795978131.359005 n containerd[182]: time="x" level=info msg="StopPodSandbox for \"711a19b88392b1e31622c9a49f4eb9ab8ccf3469666c0def8e0becd2044a09ef\""
1795978132.000000 n containerd[182]: time="x" level=info msg="StopPodSandbox for \"0a26557b245249522e404e1a97db2295b735de5c2b7b8c569984f242d2ac6730\""
`

func TestPressureV2OOM(t *testing.T) {
	j := "1795978300.5 n kernel: oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=x.scope,mems_allowed=0,oom_memcg=/system.slice,task_memcg=/system.slice/a.service,task=a,pid=1,uid=0\n" +
		"1795978305.836074 n kernel: oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=x.scope,mems_allowed=0,oom_memcg=/kubepods.slice,task_memcg=/kubepods.slice/kubepods-burstable.slice/p.slice/c.scope,task=testbox,pid=2239,uid=0\n"
	got, _ := parseFirstOOM(j, "/kubepods.slice")
	if got.Unix() != 1795978305 || got.Nanosecond() != 836074000 {
		t.Errorf("first OOM kill in kubepods.slice at %v, want 1795978305.836074", got)
	}
	if got, _ := parseFirstOOM(j, "/kubepods"); !got.IsZero() {
		t.Errorf("an OOM kill under /kubepods.slice counted for /kubepods: %v", got)
	}
}

func TestPressureV2Stops(t *testing.T) {
	got, containers := parseStops(pressureV2Journal)
	if !containers["3f1bfdd5-6aa3"] || containers["aaaa-bbbb"] {
		t.Errorf("pods with a container stopped %v, want p's only", containers)
	}
	if len(got) != 2 {
		t.Fatalf("stops %v, want two pods", got)
	}
	if s := got["3f1bfdd5-6aa3"]; s.Unix() != 1795978127 || s.Nanosecond() != 300440000 {
		t.Errorf("first stop of p: %v, want the StopContainer at 1795978127.300440", s)
	}
	if s := got["aaaa-bbbb"]; s.Unix() != 1795978132 {
		t.Errorf("first stop of q: %v, want its StopPodSandbox", s)
	}
}

func TestExpandArgs(t *testing.T) {
	in := []string{"write", "--leave", "{leave}", "--mark", "{mark}", "--n={n}"}
	got := expandArgs(in, "{mark}", "593", "{leave}", "100")
	want := []string{"write", "--leave", "100", "--mark", "593", "--n={n}"}
	if strings.Join(got, " ") != strings.Join(want, " ") || in[2] != "{leave}" {
		t.Fatalf("expandArgs = %q (input now %q), want %q", got, in, want)
	}
}

func TestPressureV2SwapOn(t *testing.T) {
	for kind, want := range map[string]string{"": "swapon /swapfile", "file": "swapon /swapfile", "zram": "swapon /dev/zram0"} {
		got, err := pressureV2SwapOn(kind)
		if err != nil || !strings.HasSuffix(got, want) || !strings.Contains(got, strconv.Itoa(pressureV2SwapMiB)+"M") {
			t.Errorf("pressureV2SwapOn(%q) = %q, %v; want a %d MiB device ending %q", kind, got, err, pressureV2SwapMiB, want)
		}
	}
	if _, err := pressureV2SwapOn("zswap"); err == nil || !strings.Contains(err.Error(), `"zswap"`) {
		t.Errorf("an unknown kind: %v, want an error naming it", err)
	}
}
