package top

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kernelet/kernelet/agent/live"
)

// SortKey orders the pod table.
type SortKey int

// The sort keys, each bound to a key of the keyboard.
const (
	SortMemory SortKey = iota // working set, largest first
	SortPSI                   // memory PSI some avg10, highest first
	SortOOM                   // OOM kills, most first
	SortName                  // namespace/name
)

var sortNames = [...]string{SortMemory: "memory", SortPSI: "psi", SortOOM: "oom kills", SortName: "name"}

func (k SortKey) String() string { return sortNames[k] }

// SortKeys maps the keyboard to the sort keys.
var SortKeys = map[string]SortKey{"m": SortMemory, "p": SortPSI, "o": SortOOM, "n": SortName}

// State is what the view shows.
type State struct {
	Source   string
	Snapshot *live.Snapshot
	// Events are the latest events, oldest first.
	Events []live.Event
	Sort   SortKey
	// Err is the stream's last error while it is down.
	Err           error
	Width, Height int
}

// maxEvents is how many events State keeps.
const maxEvents = 50

// Apply folds a stream update into the state.
func (s *State) Apply(u Update) {
	switch {
	case u.Snapshot != nil:
		s.Snapshot, s.Err = u.Snapshot, nil
	case u.Event != nil:
		s.Events = append(s.Events, *u.Event)
		if n := len(s.Events); n > maxEvents {
			s.Events = slices.Clone(s.Events[n-maxEvents:])
		}
	case u.Err != nil:
		s.Err = u.Err
	}
}

// SortPods orders pods by key (ties by namespace/name).
func SortPods(pods []live.Pod, key SortKey) []live.Pod {
	out := slices.Clone(pods)
	psi := func(p live.Pod) float64 {
		if p.PSI == nil {
			return -1
		}
		return p.PSI.SomeAvg10
	}
	slices.SortStableFunc(out, func(a, b live.Pod) int {
		var c int
		switch key {
		case SortMemory:
			c = cmp.Compare(b.WorkingSetBytes, a.WorkingSetBytes)
		case SortPSI:
			c = cmp.Compare(psi(b), psi(a))
		case SortOOM:
			c = cmp.Compare(b.OOMKills, a.OOMKills)
		}
		if c != 0 {
			return c
		}
		return cmp.Compare(a.String(), b.String())
	})
	return out
}

// View renders the state in width × height cells (80×24 when unknown):
// header, node memory and thresholds, PSI, the pod table (as many rows as
// fit), the latest events, and the keys.
func View(s State) string {
	w, h := s.Width, s.Height
	if w <= 0 {
		w = 80
	}
	if h <= 0 {
		h = 24
	}
	var top, bottom []string
	sn := s.Snapshot
	node := ""
	if sn != nil {
		node = sn.NodeName
	}
	top = append(top, fmt.Sprintf("kernelet top — %s   sort: %s", node, s.Sort))
	switch {
	case s.Err != nil:
		top = append(top, "agent "+s.Source+": "+s.Err.Error())
	case sn == nil:
		top = append(top, "waiting for "+s.Source+" …")
	}
	if sn != nil {
		top = append(top, nodeLines(sn)...)
	}
	bottom = append(bottom, eventLines(s.Events, 4)...)
	bottom = append(bottom, "keys: m memory  p psi  o oom kills  n name  q quit")
	rows := h - len(top) - len(bottom) - 1 // the table's header
	nameWidth := max(w-len(fmt.Sprintf(podFormat, "", "", "", "", "", "")), minNameWidth)
	table := []string{podRow(nameWidth, "NAMESPACE/POD", "QOS", "WORKSET", "REQUEST", "LIMIT", "PSI", "OOM")}
	if sn != nil {
		pods := SortPods(sn.Pods, s.Sort)
		for i, p := range pods {
			if i >= rows {
				break
			}
			if i == rows-1 && len(pods) > rows {
				table = append(table, fmt.Sprintf("… %d more pods", len(pods)-i))
				break
			}
			table = append(table, podLine(nameWidth, p))
		}
	}
	lines := append(append(top, table...), bottom...)
	for i, l := range lines {
		lines[i] = fit(l, w)
	}
	if len(lines) > h {
		lines = lines[:h]
	}
	return strings.Join(lines, "\n")
}

func nodeLines(sn *live.Snapshot) []string {
	pressure := "no pressure"
	if len(sn.Conditions) > 0 {
		pressure = "PRESSURE: " + strings.Join(sn.Conditions, ",")
	}
	mem := fmt.Sprintf("memory.available %s of %s", bytes(sn.Node.AvailableBytes), bytes(sn.Node.CapacityBytes))
	if a := sn.Allocatable; a != nil {
		mem += fmt.Sprintf("  pods %s of %s", bytes(a.AvailableBytes), bytes(a.CapacityBytes))
	}
	var th []string
	for _, t := range sn.Thresholds {
		s := fmt.Sprintf("%s<%s", t.Signal, t.Value)
		if t.Met {
			s += " MET"
		}
		th = append(th, s)
	}
	if len(th) == 0 {
		th = []string{"none"}
	}
	return []string{
		mem + "  " + pressure,
		"thresholds: " + strings.Join(th, "  "),
		"memory PSI avg10 some/full: node " + psiText(sn.NodePSI) + "  kubepods " + psiText(sn.KubepodsPSI),
	}
}

// podFormat is the pod table's row after the name column: 46 cells; the
// name takes the rest of the width (34 cells of 80), at least
// minNameWidth.
const (
	podFormat    = " %-10s %8s %7s %7s %5s %3s"
	minNameWidth = 20
)

// podRow is one row of the table, name cut to width.
func podRow(width int, name string, cols ...any) string {
	return fmt.Sprintf("%-*s", width, fit(name, width)) + fmt.Sprintf(podFormat, cols...)
}

func podLine(width int, p live.Pod) string {
	psi := "-"
	if p.PSI != nil {
		psi = fmt.Sprintf("%.2f", p.PSI.SomeAvg10)
	}
	return podRow(width, p.String(), p.QoS, bytes(p.WorkingSetBytes),
		bytesOrDash(p.RequestBytes), bytesOrDash(p.LimitBytes), psi, strconv.Itoa(p.OOMKills))
}

// eventLines are the last n events, newest last.
func eventLines(es []live.Event, n int) []string {
	if len(es) > n {
		es = es[len(es)-n:]
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Time.Local().Format("15:04:05")+" "+Describe(e))
	}
	return out
}

// Describe is one line about an event.
func Describe(e live.Event) string {
	switch {
	case e.Eviction != nil:
		return fmt.Sprintf("Evicted %s (%s)", e.Eviction.Pod, e.Eviction.Signal)
	case e.OOMKill != nil:
		k := e.OOMKill
		s := "OOMKill"
		if k.Pod != nil {
			s += " " + k.Pod.String()
		}
		if k.Container != "" {
			s += " container " + k.Container
		}
		if k.PID != 0 {
			s += fmt.Sprintf(" pid %d", k.PID)
		}
		if k.Comm != "" {
			s += " (" + k.Comm + ")"
		}
		return s
	case e.Condition != nil:
		return fmt.Sprintf("%s=%s %s", e.Condition.Type, e.Condition.Status, e.Condition.Reason)
	}
	return string(e.Kind)
}

func psiText(p *live.PSI) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f/%.2f%%", p.SomeAvg10, p.FullAvg10)
}

// bytes prints a size in Mi/Gi, "-" when unknown (negative).
func bytes(b int64) string {
	switch {
	case b < 0:
		return "-"
	case b >= 10<<30:
		return fmt.Sprintf("%.0fGi", float64(b)/(1<<30))
	case b >= 1<<30:
		return fmt.Sprintf("%.1fGi", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%.0fMi", float64(b)/(1<<20))
}

func bytesOrDash(b int64) string {
	if b == 0 {
		return "-"
	}
	return bytes(b)
}

// fit cuts s to w cells (the view is ASCII apart from "…" and "—").
func fit(s string, w int) string {
	r := []rune(s)
	if len(r) <= w {
		return s
	}
	return string(r[:w-1]) + "…"
}
