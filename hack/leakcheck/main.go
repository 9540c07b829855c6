package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kernelet/kernelet/internal/mountinfo"
	"github.com/kernelet/kernelet/test/env"
)

// Snapshot is one listing, by kind of resource.
type Snapshot map[string][]string

// Kinds are the kinds of resource the check lists, in report order.
var Kinds = []string{"cgroup", "mount", "netns", "link", "process", "file", "shim-socket"}

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "snapshot" && os.Args[1] != "compare") {
		fmt.Fprintln(os.Stderr, "usage: leakcheck snapshot|compare FILE")
		os.Exit(2)
	}
	if os.Args[1] == "compare" {
		// Components remove their own state dirs; the run's dir above them
		// is shared by parallel test binaries, so it is removed here, once
		// everything is done — only when empty (anything in it is a leak).
		_ = os.Remove(filepath.Join(env.StateBase(), env.RunID()))
	}
	if os.Getenv(env.RunIDEnv) == "" {
		fmt.Fprintf(os.Stderr, "leakcheck: $%s is not set: nothing names this run's resources\n", env.RunIDEnv)
		os.Exit(2)
	}
	now := take(env.RunID())
	switch os.Args[1] {
	case "snapshot":
		b, _ := json.MarshalIndent(now, "", " ")
		if err := os.WriteFile(os.Args[2], b, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "leakcheck: %v\n", err)
			os.Exit(1)
		}
	case "compare":
		b, err := os.ReadFile(os.Args[2])
		if err != nil {
			fmt.Fprintf(os.Stderr, "leakcheck: no snapshot from before the run: %v\n", err)
			os.Exit(1)
		}
		var before Snapshot
		if err := json.Unmarshal(b, &before); err != nil {
			fmt.Fprintf(os.Stderr, "leakcheck: %s: %v\n", os.Args[2], err)
			os.Exit(1)
		}
		leaks := Diff(before, now)
		var counts []string
		total := 0
		for _, k := range Kinds {
			counts = append(counts, fmt.Sprintf("%d %s", len(leaks[k]), k))
			total += len(leaks[k])
		}
		if total == 0 {
			fmt.Printf("leakcheck: clean — nothing left behind (checked %s)\n", strings.Join(checked(now), ", "))
			return
		}
		fmt.Printf("leakcheck: FAILED — left behind: %s\n", strings.Join(counts, ", "))
		for _, k := range Kinds {
			for _, item := range leaks[k] {
				fmt.Printf("  %-11s %s\n", k, item)
			}
		}
		os.Exit(1)
	}
}

// Diff returns, per kind, what after has and before had not, sorted.
func Diff(before, after Snapshot) Snapshot {
	out := Snapshot{}
	for _, k := range Kinds {
		had := map[string]bool{}
		for _, s := range before[k] {
			had[s] = true
		}
		for _, s := range after[k] {
			if !had[s] {
				out[k] = append(out[k], s)
			}
		}
		sort.Strings(out[k])
	}
	return out
}

func checked(s Snapshot) []string {
	var out []string
	for _, k := range Kinds {
		out = append(out, fmt.Sprintf("%s: %d present before and after", k, len(s[k])))
	}
	return out
}

// take lists everything on the host that carries id.
func take(id string) Snapshot {
	prefix := id
	s := Snapshot{}
	mounts := readMounts()
	for _, m := range mounts {
		if m.fstype == "cgroup" || m.fstype == "cgroup2" {
			_ = filepath.WalkDir(m.point, func(p string, d fs.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				if strings.Contains(d.Name(), prefix) {
					s["cgroup"] = append(s["cgroup"], p)
				}
				return nil
			})
		}
		if strings.Contains(m.point, prefix) || strings.Contains(m.source, prefix) {
			s["mount"] = append(s["mount"], m.point+" ("+m.fstype+")")
		}
	}
	s.addEntries("netns", prefix, "/run/netns", "/var/run/netns")
	links, _ := os.ReadDir("/sys/class/net")
	for _, l := range links {
		if strings.Contains(l.Name(), prefix) {
			s["link"] = append(s["link"], l.Name())
		}
	}
	procs, _ := os.ReadDir("/proc")
	self := fmt.Sprint(os.Getpid())
	for _, p := range procs {
		if p.Name() == self || !isDigits(p.Name()) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		cg, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cgroup"))
		if bytes.Contains(cmd, []byte(prefix)) || bytes.Contains(cg, []byte(prefix)) {
			if isZombieOrGone(p.Name()) {
				continue
			}
			s["process"] = append(s["process"], p.Name()+" "+strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))))
		}
	}
	s.addEntries("file", prefix, env.StateBase(), "/var/lib/cni/results", "/var/lib/cni/networks", os.TempDir())
	// Shim sockets carry no run id. A live shim of this run is caught by
	// the process check; one of another run still listens. What nobody
	// listens on any more is a stale file left behind.
	socks, _ := os.ReadDir("/run/containerd/s")
	for _, e := range socks {
		p := filepath.Join("/run/containerd/s", e.Name())
		if c, err := net.DialTimeout("unix", p, 200*time.Millisecond); err == nil {
			c.Close()
			continue
		}
		s["shim-socket"] = append(s["shim-socket"], p)
	}
	return s
}

type mount struct{ point, source, fstype string }

// readMounts lists this mount namespace's mounts (mount point, source and
// fs type from /proc/self/mountinfo).
func readMounts() []mount {
	es, err := mountinfo.Self(nil)
	if err != nil {
		return nil
	}
	out := make([]mount, 0, len(es))
	for _, e := range es {
		out = append(out, mount{point: e.Point, source: e.Source, fstype: e.FSType})
	}
	return out
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

func isZombieOrGone(pid string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return true
	}
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] == 'Z'
	}
	return false
}

// addEntries adds to s[kind] the path of every entry of dirs whose name
// contains prefix.
func (s Snapshot) addEntries(kind, prefix string, dirs ...string) {
	for _, dir := range dirs {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.Contains(e.Name(), prefix) {
				s[kind] = append(s[kind], filepath.Join(dir, e.Name()))
			}
		}
	}
}
