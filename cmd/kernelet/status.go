package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/eviction"
)

// statusCommand: `kernelet status [--server URL] [--root-dir DIR]` prints
// the agent's health (every check) and its status summary. By default it
// asks the agent's local socket (<root-dir>/kernelet.sock, root only);
// --server may also name the read-only port (http://127.0.0.1:10255) or a
// unix:// socket. Exit 1 when the agent cannot be reached or is unhealthy.
func statusCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var addr agentAddr
	fs := newFlagSet("status", stderr)
	addr.register(fs, "the agent's API URL: unix:///path/to/kernelet.sock, http://host:readOnlyPort or https://host:port")
	asJSON := fs.Bool("json", false, "print the agent's /status as JSON")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the agent")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kernelet status: unexpected arguments %q\n", fs.Args())
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	base, client, err := addr.client()
	if err != nil {
		fmt.Fprintf(stderr, "kernelet status: %v\n", err)
		return 2
	}
	get := func(ctx context.Context, url string) (int, string, error) {
		return get(ctx, client, addr.url(base, url))
	}

	code, health, err := get(ctx, base+"/healthz?verbose")
	if err != nil {
		fmt.Fprintf(stderr, "kernelet status: agent at %s not reachable: %v\n", base, err)
		return 1
	}
	health = failureReasons(ctx, get, base, health)
	_, body, err := get(ctx, base+"/status")
	if err != nil {
		fmt.Fprintf(stderr, "kernelet status: %v\n", err)
		return 1
	}
	if *asJSON {
		fmt.Fprint(stdout, body)
		return exitForHealth(code)
	}
	var st agent.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		fmt.Fprintf(stderr, "kernelet status: %s/status: %v\n", base, err)
		return 1
	}
	printStatus(stdout, base, code, health, st)
	if _, body, err := get(ctx, base+"/pods"); err == nil {
		var pods v1.PodList
		if err := json.Unmarshal([]byte(body), &pods); err == nil {
			printPods(stdout, pods.Items, time.Now())
			printPodProblems(stdout, pods.Items)
		}
	}
	return exitForHealth(code)
}

// failureReasons replaces each "reason withheld" of a /healthz answer
// (kubelet's format keeps reasons out of it) with the reason the check's
// own path /healthz/<check> gives.
func failureReasons(ctx context.Context, get func(context.Context, string) (int, string, error), base, health string) string {
	lines := strings.Split(health, "\n")
	for i, l := range lines {
		name, ok := strings.CutSuffix(strings.TrimPrefix(l, "[-]"), " failed: reason withheld")
		if !ok || !strings.HasPrefix(l, "[-]") {
			continue
		}
		code, body, err := get(ctx, base+"/healthz/"+name)
		switch {
		case err != nil:
		case code == http.StatusOK:
			// It passed by the time its reason was asked for.
			lines[i] = "[-]" + name + " failed (passes again now)"
		default:
			reason := strings.TrimSpace(strings.TrimPrefix(body, "internal server error: "))
			lines[i] = "[-]" + name + " failed: " + reason
		}
	}
	return strings.Join(lines, "\n")
}

func exitForHealth(code int) int {
	if code == http.StatusOK {
		return 0
	}
	return 1
}

func printStatus(w io.Writer, base string, code int, health string, st agent.Status) {
	state := "healthy"
	if code != http.StatusOK {
		state = fmt.Sprintf("UNHEALTHY (HTTP %d)", code)
	}
	rev := ""
	if st.Revision != "" {
		rev = " (" + st.Revision + ")"
	}
	fmt.Fprintf(w, "Agent:       %s  kernelet %s%s\n", base, st.Version, rev)
	fmt.Fprintf(w, "Node:        %s (%s)\n", st.NodeName, st.Mode)
	if !st.StartTime.IsZero() {
		fmt.Fprintf(w, "Up:          %s (since %s)\n", time.Since(st.StartTime).Round(time.Second), st.StartTime.Format(time.RFC3339))
	}
	cfg := st.ConfigFile
	if cfg == "" {
		cfg = "(defaults and flags)"
	}
	fmt.Fprintf(w, "Config:      %s\n", cfg)
	fmt.Fprintf(w, "Health:      %s\n%s\n", state, indent(health))
	switch {
	case st.Runtime.Connected && st.Runtime.Info != nil:
		i := st.Runtime.Info
		fmt.Fprintf(w, "Runtime:     %s %s (CRI %s) at %s\n", i.RuntimeName, i.RuntimeVersion, i.RuntimeAPIVersion, i.Endpoint)
		for _, k := range slices.Sorted(maps.Keys(i.Conditions)) {
			fmt.Fprintf(w, "  %s=%s\n", k, i.Conditions[k])
		}
	case st.Runtime.Connected:
		// Connected, but the runtime does not answer (containerd stopped,
		// or too slow): the agent keeps its connection and retries.
		fmt.Fprintf(w, "Runtime:     not answering: %s\n", st.Runtime.Error)
	default:
		fmt.Fprintf(w, "Runtime:     not connected: %s\n", st.Runtime.Error)
	}
	if c := st.Cluster; c != nil {
		printCluster(w, c, time.Now())
	}
	if len(st.Thresholds) > 0 {
		fmt.Fprintf(w, "Eviction:    %s\n", strings.Join(st.Thresholds, ", "))
	}
	if e := st.Eviction; e != nil {
		printEviction(w, e)
	}
	if o := st.OOM; o != nil {
		printOOM(w, o)
	}
	if len(st.Endpoints) > 0 {
		fmt.Fprintf(w, "Endpoints:   %s\n", strings.Join(st.Endpoints, ", "))
	}
	if st.PodsError != "" {
		fmt.Fprintf(w, "Pods:        not running: %s\n", st.PodsError)
	}
	if len(st.SourceProblems) > 0 {
		fmt.Fprintf(w, "Source problems:\n")
		for _, p := range st.SourceProblems {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
}

// printPods prints the pods table: NAMESPACE/NAME, PHASE, READY, RESTARTS,
// AGE, IP and OOM_SCORE_ADJ (the effective value of its containers, with
// the requested one where the runtime or the kernel refused it).
func printPods(w io.Writer, pods []v1.Pod, now time.Time) {
	fmt.Fprintf(w, "Pods:        %d\n", len(pods))
	if len(pods) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAMESPACE/NAME\tPHASE\tREADY\tRESTARTS\tAGE\tIP\tOOM_SCORE_ADJ")
	for _, p := range pods {
		ready, restarts := 0, int32(0)
		for _, c := range p.Status.ContainerStatuses {
			if c.Ready {
				ready++
			}
			restarts += c.RestartCount
		}
		phase := string(p.Status.Phase)
		if p.Status.Reason != "" {
			phase += " (" + p.Status.Reason + ")"
		}
		age := "-"
		if p.Status.StartTime != nil {
			age = now.Sub(p.Status.StartTime.Time).Round(time.Second).String()
		}
		ip := p.Status.PodIP
		if ip == "" {
			ip = "-"
		}
		fmt.Fprintf(tw, "  %s/%s\t%s\t%d/%d\t%d\t%s\t%s\t%s\n", p.Namespace, p.Name, phase, ready, len(p.Spec.Containers), restarts, age,
			ip, oomScoreColumn(p.Annotations[runtime.AnnotationOOMScoreAdj]))
	}
	_ = tw.Flush()
}

// printPodProblems lists what an operator must look at in the pods: a pod
// the agent failed or rejected (with its reason and message), and each
// container that is waiting on an error or whose current or last run ended
// in an error (OOMKilled with its exit code first among them).
func printPodProblems(w io.Writer, pods []v1.Pod) {
	var lines []string
	for _, p := range pods {
		name := p.Namespace + "/" + p.Name
		if p.Status.Phase == v1.PodFailed || p.Status.Reason != "" {
			line := fmt.Sprintf("%s: %s", name, p.Status.Phase)
			if p.Status.Reason != "" {
				line += ": " + p.Status.Reason
			}
			if p.Status.Message != "" {
				line += ": " + p.Status.Message
			}
			lines = append(lines, line)
		}
		for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
			for _, c := range list {
				if msg := containerProblem(c); msg != "" {
					lines = append(lines, fmt.Sprintf("%s container %s: %s", name, c.Name, msg))
				}
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "Pod problems:\n")
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// containerProblem says what is wrong with a container, or "": waiting with
// a reason other than starting, or terminated now or last with an error.
func containerProblem(c v1.ContainerStatus) string {
	terminated := func(t *v1.ContainerStateTerminated, when string) string {
		if t == nil || (t.ExitCode == 0 && t.Reason != "OOMKilled") {
			return ""
		}
		reason := t.Reason
		if reason == "" {
			reason = "Error"
		}
		msg := fmt.Sprintf("%s%s (exit %d", when, reason, t.ExitCode)
		if !t.FinishedAt.IsZero() {
			msg += ", at " + t.FinishedAt.UTC().Format(time.RFC3339)
		}
		return msg + ")"
	}
	if w := c.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
		msg := "waiting: " + w.Reason
		if w.Message != "" {
			msg += ": " + w.Message
		}
		if last := terminated(c.LastTerminationState.Terminated, "last run "); last != "" {
			msg += "; " + last
		}
		return msg
	}
	if now := terminated(c.State.Terminated, ""); now != "" {
		return now
	}
	return terminated(c.LastTerminationState.Terminated, "last run ")
}

func get(ctx context.Context, client *http.Client, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", fmt.Errorf("request %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", fmt.Errorf("read %s: %w", url, err)
	}
	return resp.StatusCode, string(b), nil
}

// oomScoreColumn renders the kernelet.io/oom-score-adj annotation: "999",
// "0 (asked -997)", or per container "app=0 (asked -997), side=999".
func oomScoreColumn(ann string) string {
	if ann == "" {
		return "-"
	}
	scores, err := runtime.ParseOOMScoreAnnotation(ann)
	if err != nil || len(scores) == 0 {
		return "?"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(scores)) {
		c := scores[name]
		v := strconv.Itoa(c.Effective)
		if c.Effective != c.Requested {
			v += fmt.Sprintf(" (asked %d)", c.Requested)
		}
		if len(scores) > 1 {
			v = name + "=" + v
		}
		parts = append(parts, v)
	}
	return strings.Join(parts, ", ")
}

// printCluster prints the API server side: where it is, and the age of the
// last success of each kind of report, with the last error.
func printCluster(w io.Writer, c *agent.ClusterStatus, now time.Time) {
	fmt.Fprintf(w, "API server:  %s\n", c.APIServer)
	n := c.Node
	fmt.Fprintf(w, "  node registered %s, status written %s (checked %s), lease renewed %s\n",
		ago(n.Registered, now), ago(n.LastStatusPatch, now), ago(n.LastStatusCheck, now), ago(n.LastLeaseRenew, now))
	fmt.Fprintf(w, "  pod statuses: %d tracked, last written %s, last sync %s\n",
		c.Pods.Pods, ago(c.Pods.LastPatch, now), ago(c.Pods.LastSync, now))
	for _, e := range []struct {
		what, err string
		at        time.Time
	}{{"node", n.LastError, n.LastErrorTime}, {"pods", c.Pods.LastError, c.Pods.LastErrorTime}} {
		if e.err != "" {
			fmt.Fprintf(w, "  last %s API error %s: %s\n", e.what, ago(e.at, now), e.err)
		}
	}
}

// reactionLine says what started an eviction's decision and, for a
// kernel wake, how long the stats read and the decision took after it
// ("" for a record without a trigger).
func reactionLine(r eviction.Record) string {
	if r.Trigger == "" {
		return ""
	}
	l := "trigger " + string(r.Trigger)
	if !r.Woke.IsZero() && !r.Read.IsZero() {
		l += fmt.Sprintf(": stats read %v and decided %v after the wake", r.Read.Sub(r.Woke).Round(time.Microsecond), r.Time.Sub(r.Woke).Round(time.Microsecond))
	}
	return l
}

// ago says how long ago t was ("never" for the zero time).
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

// printEviction prints the pressure conditions, each threshold against
// its observed signal, and the latest evictions.
func printEviction(w io.Writer, e *eviction.Status) {
	conds := "none"
	if len(e.Conditions) > 0 {
		conds = fmt.Sprint(e.Conditions)
	}
	fmt.Fprintf(w, "Pressure:    %s (decided %s ago)\n", conds, time.Since(e.LastDecision).Round(time.Millisecond))
	if mode := evictionMode(e); mode != "" {
		fmt.Fprintf(w, "  mode: %s\n", mode)
	}
	for _, t := range e.Thresholds {
		fmt.Fprintf(w, "  %s\n", thresholdLine(t))
		if pc := t.PageCache; pc != nil {
			fmt.Fprintf(w, "    page cache (memoryPageCache: refaults): %s of active file not counted; %s\n", humanBytes(pc.Reclaimable), pc.Why)
		}
	}
	printThrottle(w, e.Throttle)
	for _, r := range e.Evictions {
		fmt.Fprintf(w, "  evicted %s (%s) at %s: %s\n", r.Pod, r.Signal, r.Time.Format(time.RFC3339), r.Message)
		if l := reactionLine(r); l != "" {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	for _, r := range e.WouldEvict {
		fmt.Fprintf(w, "  would evict %s (%s) at %s: %s\n", r.Pod, r.Signal, r.Time.Format(time.RFC3339), r.Message)
	}
}

// printThrottle prints the memory throttler's state (memoryThrottle on).
func printThrottle(w io.Writer, t *eviction.ThrottleStatus) {
	if t == nil {
		return
	}
	fmt.Fprintf(w, "  memory throttle (memoryThrottle): deadline %v, max stall %s, deficit %s", t.Deadline,
		strconv.FormatFloat(t.MaxStall*100, 'f', -1, 64)+"%", humanBytes(t.Deficit))
	if t.Proactive {
		fmt.Fprintf(w, ", proactive reclaim (memory.reclaim) %s", humanBytes(t.Reclaimed))
	}
	for _, k := range slices.Sorted(maps.Keys(t.Actions)) {
		fmt.Fprintf(w, ", %s %d", k, t.Actions[k])
	}
	fmt.Fprintln(w)
	for _, s := range slices.Sorted(maps.Keys(t.Holding)) {
		fmt.Fprintf(w, "    holding eviction for %s, met for %v\n", s, time.Since(t.Holding[s]).Round(time.Millisecond))
	}
	for _, p := range t.Pods {
		restore := "max"
		if p.Restore > 0 {
			restore = humanBytes(p.Restore)
		}
		fmt.Fprintf(w, "    throttled %s: memory.high %s (kubelet's %s), usage %s, stalled %.0f%%, for %v\n", p.Pod,
			humanBytes(p.High), restore, humanBytes(p.Usage), p.Stall*100, time.Since(p.Since).Round(time.Second))
	}
}

// evictionMode describes a mode other than kernelet's default, or "".
func evictionMode(e *eviction.Status) string {
	var parts []string
	if e.Mode != "" && e.Mode != eviction.ModeKernelet {
		parts = append(parts, string(e.Mode)+" (one pod per decision, no kernel wake-ups)")
	}
	if e.DryRun {
		parts = append(parts, "dry run (nothing is evicted)")
	}
	return strings.Join(parts, ", ")
}

// thresholdLine is one threshold against its observed signal: signal,
// operator and threshold, the observed value (percent of stalled time
// for PSI signals), the threshold's amount, the observation's age.
func thresholdLine(t eviction.ThresholdStatus) string {
	op, obs := "<", "not observed"
	switch {
	case t.PSI && t.Observed:
		op, obs = ">", fmt.Sprintf("stalled %s, threshold %s", eviction.FormatPSI(t.Available), eviction.FormatPSI(t.Quantity))
	case t.PSI:
		op = ">"
	case t.Observed:
		amount := func(v int64) string { return strconv.FormatInt(v, 10) }
		if bytesSignal(t.Signal) {
			amount = humanBytes
		}
		obs = fmt.Sprintf("available %s, threshold %s", amount(t.Available), amount(t.Quantity))
	}
	if t.Observed && !t.ObservedAt.IsZero() {
		obs += fmt.Sprintf(" (read %s ago)", time.Since(t.ObservedAt).Round(time.Millisecond))
	}
	if t.Met {
		obs += " MET"
	}
	return fmt.Sprintf("%s%s%s: %s", t.Signal, op, t.Threshold, obs)
}

// bytesSignal: the signal's amounts are bytes (memory and filesystem
// space), not counts (inodes, PIDs) or PSI stalls.
func bytesSignal(s eviction.Signal) bool {
	return strings.HasSuffix(string(s), ".available") && s != eviction.SignalPIDAvailable
}

// binarySuffixes are kubectl's binary quantity suffixes, 1024^1 up.
var binarySuffixes = []string{"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}

// humanBytes renders n bytes as kubectl renders a quantity for people: in
// the largest binary unit it reaches, with one decimal where the amount is
// not whole in it ("75.2Gi", "64Mi", "1000").
func humanBytes(n int64) string {
	sign, u := "", uint64(n)
	if n < 0 {
		sign, u = "-", uint64(-n)
	}
	if u < 1024 {
		return sign + strconv.FormatUint(u, 10)
	}
	unit, i := uint64(1024), 0
	for i+1 < len(binarySuffixes) && u >= unit*1024 {
		unit *= 1024
		i++
	}
	// Tenths of the unit, rounded half up; 1023.96Ki rounds to 1Mi.
	tenths := u/unit*10 + (u%unit*10+unit/2)/unit
	if tenths >= 10240 && i+1 < len(binarySuffixes) {
		tenths, i = tenths/1024, i+1
	}
	if tenths%10 == 0 {
		return fmt.Sprintf("%s%d%s", sign, tenths/10, binarySuffixes[i])
	}
	return fmt.Sprintf("%s%d.%d%s", sign, tenths/10, tenths%10, binarySuffixes[i])
}

// printOOM prints the OOM kill sources (and the fallbacks replacing eBPF)
// and the recent kills with victim pid, comm, pod/container and scope.
func printOOM(w io.Writer, o *agent.OOMStatus) {
	switch {
	case o.Error != "":
		fmt.Fprintf(w, "OOM kills:   not watched: %s\n", o.Error)
	case o.Fallback != "":
		fmt.Fprintf(w, "OOM kills:   via %s (fallback; %s)\n", o.Sources, o.Fallback)
	default:
		fmt.Fprintf(w, "OOM kills:   via %s\n", o.Sources)
	}
	if o.CgroupTracer != "" {
		fmt.Fprintf(w, "  cgroup ids: %s\n", o.CgroupTracer)
	}
	for _, n := range o.Notes {
		fmt.Fprintf(w, "  not used: %s\n", n)
	}
	if o.Total > 0 {
		fmt.Fprintf(w, "  %d kill(s) since start, latest:\n", o.Total)
	}
	for _, k := range o.Recent {
		who := "-"
		if k.Pod != "" {
			who = k.Namespace + "/" + k.Pod
			if k.Container != "" {
				who += "/" + k.Container
			}
		}
		fmt.Fprintf(w, "  %s pid %d (%s) %s scope=%s memcg=%s via %s, event after %v\n", k.Time.Format(time.RFC3339Nano), k.Pid, k.Comm,
			who, k.Scope, k.Memcg, k.Sources, k.Latency.Round(time.Microsecond))
	}
}
