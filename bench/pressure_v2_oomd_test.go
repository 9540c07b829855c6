package bench

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// systemd-oomd's column of the v2 node's pressure replay: Debian 12's
// systemd-oomd (the guest's systemd 252, in the node image but not
// enabled) started for this agent only, with Debian's defaults — its
// drop-ins set ManagedOOMSwap=kill on the root slice (kill when swap used
// passes 90 %) and DefaultMemoryPressureDurationSec=20s, the memory
// pressure limit staying oomd's 60 % — and the one setting a node would
// add: ManagedOOMMemoryPressure=kill on kubepods.slice (oomd then kills,
// of the cgroups below it, the one with the most reclaim activity when
// kubepods.slice's memory pressure stays past 60 % for 20 s). The pods
// are run by kernelet in dry run, as for "none": no agent evicts, oomd
// alone acts. Its kills are read from its journal ("Killed <cgroup> due
// to …"); a kill counts as the agent's stop of the pod the cgroup belongs
// to. oomd has no PID policy: the fork storm is not run for it.

const (
	agentOomd = "systemd-oomd"
	// pressureV2OomdOn gives kubepods.slice to oomd and starts it;
	// pressureV2OomdOff undoes both (the property is a runtime one: gone
	// at reboot too).
	pressureV2OomdOn = "systemctl set-property --runtime kubepods.slice ManagedOOMMemoryPressure=kill && " +
		"systemctl start systemd-oomd.socket systemd-oomd.service && " +
		"for i in $(seq 50); do oomctl dump 2>/dev/null | grep -q kubepods.slice && break; sleep 0.2; done; oomctl dump"
	pressureV2OomdOff = "systemctl stop systemd-oomd.service systemd-oomd.socket; " +
		"systemctl set-property --runtime kubepods.slice ManagedOOMMemoryPressure=auto 2>/dev/null; true"
)

// oomdKill is the cgroup systemd-oomd names in its kill line.
var oomdKill = regexp.MustCompile(`Killed (/\S+) due to`)

// podSliceUID is a pod's UID in its systemd-driver slice name
// (kubepods-burstable-pod<uid with _ for ->.slice).
var podSliceUID = regexp.MustCompile(`-pod([0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12})\.slice`)

// parseOomdKills maps each pod UID whose cgroup (or a cgroup below it)
// systemd-oomd killed to the first kill's time, from its journal lines
// ("<unix time> <host> systemd-oomd[pid]: Killed <cgroup> due to …").
func parseOomdKills(journal string) map[string]time.Time {
	first := map[string]time.Time{}
	for line := range strings.Lines(journal) {
		ts, _, _ := strings.Cut(line, " ")
		t, ok := guestTime(ts)
		m := oomdKill.FindStringSubmatch(line)
		if !ok || m == nil {
			continue
		}
		u := podSliceUID.FindStringSubmatch(m[1])
		if u == nil {
			continue
		}
		uid := strings.ReplaceAll(u[1], "_", "-")
		if first[uid].IsZero() || t.Before(first[uid]) {
			first[uid] = t
		}
	}
	return first
}

// oomdKills are systemd-oomd's kills since the guest time since, by pod
// UID (parseOomdKills); every kill line is logged.
func (g *pressureV2Node) oomdKills(b *testing.B, since string) map[string]time.Time {
	b.Helper()
	out := g.guest(b, `journalctl --no-pager -o short-unix -u systemd-oomd --since @`+since+` | grep -F 'Killed ' || true`)
	for line := range strings.Lines(out) {
		b.Logf("systemd-oomd: %s", strings.TrimSpace(line))
	}
	return parseOomdKills(out)
}

// mergeFirst adds to stops every time of more that is earlier than the
// one stops has for its key (or the only one).
func mergeFirst(stops, more map[string]time.Time) {
	for k, t := range more {
		if s, ok := stops[k]; !ok || s.IsZero() || t.Before(s) {
			stops[k] = t
		}
	}
}

func TestParseOomdKills(t *testing.T) {
	j := "1795978400.250000 n systemd-oomd[90]: Killed /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3f1bfdd5_6aa3_4c1e_9d2a_0123456789ab.slice/cri-containerd-91d966aa.scope due to memory pressure for /kubepods.slice being 71.20% > 60.00% for > 30s with reclaim activity\n" +
		"1795978401.000000 n systemd-oomd[90]: Killed /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3f1bfdd5_6aa3_4c1e_9d2a_0123456789ab.slice due to memory pressure for /kubepods.slice being 70.00% > 60.00% for > 30s with reclaim activity\n" +
		"1795978402.000000 n systemd-oomd[90]: Killed /system.slice/x.service due to swap used (1) / total (2) being more than 90.00%\n" +
		"1795978403.000000 n systemd-oomd[90]: Considered 3 cgroups for killing, top candidates were: …\n"
	got := parseOomdKills(j)
	if len(got) != 1 {
		t.Fatalf("kills %v, want one pod", got)
	}
	if k := got["3f1bfdd5-6aa3-4c1e-9d2a-0123456789ab"]; k.Unix() != 1795978400 || k.Nanosecond() != 250000000 {
		t.Errorf("the pod's first kill at %v, want 1795978400.25", k)
	}
	stops := map[string]time.Time{"3f1bfdd5-6aa3-4c1e-9d2a-0123456789ab": time.Unix(1795978401, 0), "other": time.Unix(1, 0)}
	mergeFirst(stops, got)
	if k := stops["3f1bfdd5-6aa3-4c1e-9d2a-0123456789ab"]; k.Unix() != 1795978400 {
		t.Errorf("merged stop %v, want the earlier kill", k)
	}
	if len(stops) != 2 {
		t.Errorf("merge changed other keys: %v", stops)
	}
}
