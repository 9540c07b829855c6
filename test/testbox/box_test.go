package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestMain lets the tests run this test binary as testbox itself (for fork,
// pause and real signals): TESTBOX_AS_MAIN=1 makes it behave like main.
func TestMain(m *testing.M) {
	if os.Getenv("TESTBOX_AS_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func TestParse(t *testing.T) {
	cases := map[string]struct {
		args    []string
		want    *config
		wantErr bool
	}{
		"sleep forever":      {args: []string{"sleep"}, want: &config{mode: "sleep"}},
		"sleep for":          {args: []string{"sleep", "--for", "2s"}, want: &config{mode: "sleep", duration: 2 * time.Second}},
		"sleep single dash":  {args: []string{"sleep", "-for=1m"}, want: &config{mode: "sleep", duration: time.Minute}},
		"sleep bad duration": {args: []string{"sleep", "--for", "soon"}, wantErr: true},
		"sleep negative":     {args: []string{"sleep", "--for", "-1s"}, wantErr: true},
		"sleep extra arg":    {args: []string{"sleep", "5"}, wantErr: true},
		"pause":              {args: []string{"pause"}, want: &config{mode: "pause"}},
		"pause unknown flag": {args: []string{"pause", "--for", "1s"}, wantErr: true},
		"trap-term":          {args: []string{"trap-term", "--exit-after", "3s"}, want: &config{mode: "trap-term", duration: 3 * time.Second}},
		"alloc": {args: []string{"alloc", "--mib", "64", "--rate", "8.5", "--hold"},
			want: &config{mode: "alloc", mib: 64, rate: 8.5, hold: true}},
		"alloc first": {args: []string{"alloc", "--mib", "64", "--first", "60", "--rate", "2"},
			want: &config{mode: "alloc", mib: 64, first: 60, rate: 2}},
		"alloc first past mib": {args: []string{"alloc", "--mib", "4", "--first", "5"}, wantErr: true},
		"alloc term after": {args: []string{"alloc", "--mib", "4", "--term-after", "1s"},
			want: &config{mode: "alloc", mib: 4, termAfter: time.Second}},
		"alloc no mib":        {args: []string{"alloc"}, wantErr: true},
		"alloc negative rate": {args: []string{"alloc", "--mib", "1", "--rate", "-1"}, wantErr: true},
		"fork": {args: []string{"fork", "--n", "3"},
			want: &config{mode: "fork", n: 3, childArgs: []string{"sleep"}}},
		"fork zero": {args: []string{"fork", "--n", "0"}, wantErr: true},
		"fork exec at a rate": {args: []string{"fork", "--n", "3", "--rate", "50", "--exec", "/bin/sleep 3600"},
			want: &config{mode: "fork", n: 3, rate: 50, execLine: "/bin/sleep 3600", childProg: "/bin/sleep", childArgs: []string{"3600"}}},
		"fork negative rate": {args: []string{"fork", "--n", "1", "--rate", "-2"}, wantErr: true},
		"write": {args: []string{"write", "--mib", "4", "--file", "/tmp/x", "--sync"},
			want: &config{mode: "write", mib: 4, file: "/tmp/x", sync: true}},
		"write no file": {args: []string{"write", "--mib", "4"}, wantErr: true},
		"write at a rate": {args: []string{"write", "--mib", "4", "--file", "/tmp/x", "--rate", "2.5", "--hold"},
			want: &config{mode: "write", mib: 4, file: "/tmp/x", rate: 2.5, hold: true}},
		"write negative rate": {args: []string{"write", "--mib", "4", "--file", "/tmp/x", "--rate", "-1"}, wantErr: true},
		"write to the margin": {args: []string{"write", "--mib", "9000", "--file", "/x", "--rate", "50", "--leave", "100", "--mark", "600", "--hold"},
			want: &config{mode: "write", mib: 9000, file: "/x", rate: 50, leave: 100, mark: 600, hold: true}},
		"write negative leave": {args: []string{"write", "--mib", "4", "--file", "/x", "--leave", "-1"}, wantErr: true},
		"serve http":           {args: []string{"serve", "--http", ":8080"}, want: &config{mode: "serve", httpAddr: ":8080"}},
		"serve tcp":            {args: []string{"serve", "--tcp", "127.0.0.1:9"}, want: &config{mode: "serve", tcpAddr: "127.0.0.1:9"}},
		"serve both":           {args: []string{"serve", "--http", ":1", "--tcp", ":2"}, wantErr: true},
		"serve neither":        {args: []string{"serve"}, wantErr: true},
		"serve grpc":           {args: []string{"serve", "--grpc", ":9000", "--fail-after", "5s"}, want: &config{mode: "serve", grpcAddr: ":9000", failAfter: 5 * time.Second}},
		"serve two kinds":      {args: []string{"serve", "--https", ":1", "--grpc", ":2"}, wantErr: true},
		"exit":                 {args: []string{"exit", "--code", "3", "--after", "1s"}, want: &config{mode: "exit", exitCode: 3, duration: time.Second}},
		"exit no code":         {args: []string{"exit"}, wantErr: true},
		"exit code range":      {args: []string{"exit", "--code", "256"}, wantErr: true},
		"no mode":              {args: nil, wantErr: true},
		"unknown mode":         {args: []string{"dance"}, wantErr: true},
		"help":                 {args: []string{"help"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parse(tc.args)
			if tc.wantErr {
				if !errors.Is(err, errUsage) {
					t.Fatalf("parse(%q) = %+v, %v; want a usage error", tc.args, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse(%q): %v", tc.args, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parse(%q) = %+v, want %+v", tc.args, got, tc.want)
			}
		})
	}
}

// lines collects what a box logs, line by line.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	for _, s := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l <- s
	}
	return len(p), nil
}

func (l lines) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-l:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no output line within 10s")
		return ""
	}
}

type result struct {
	code    int
	elapsed time.Duration
}

// start runs args in a box in the background; signals go to the returned
// channel.
func start(t *testing.T, args ...string) (lines, chan<- os.Signal, <-chan result) {
	t.Helper()
	out := make(lines, 64)
	sigs := make(chan os.Signal, 4)
	b := &box{stdout: out, stderr: testWriter{t}, sigs: sigs}
	done := make(chan result, 1)
	go func() {
		t0 := time.Now()
		code := b.run(args)
		done <- result{code, time.Since(t0)}
	}()
	return out, sigs, done
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("stderr: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func wait(t *testing.T, done <-chan result) result {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("mode did not return within 10s")
		return result{}
	}
}

func TestSleep(t *testing.T) {
	out, _, done := start(t, "sleep", "--for", "20ms")
	if l := out.next(t); !strings.HasPrefix(l, "testbox sleep: pid=") || !strings.Contains(l, "for=20ms") {
		t.Fatalf("start line = %q", l)
	}
	if r := wait(t, done); r.code != 0 || r.elapsed < 20*time.Millisecond {
		t.Fatalf("sleep --for 20ms: %+v", r)
	}
}

func TestSleepExitsZeroOnSignal(t *testing.T) {
	out, sigs, done := start(t, "sleep")
	if l := out.next(t); !strings.Contains(l, "for=forever") {
		t.Fatalf("start line = %q", l)
	}
	sigs <- syscall.SIGTERM
	if r := wait(t, done); r.code != 0 {
		t.Fatalf("exit status %d, want 0", r.code)
	}
}

func TestTrapTermWaitsAfterSIGTERM(t *testing.T) {
	out, sigs, done := start(t, "trap-term", "--exit-after", "50ms")
	out.next(t)
	select {
	case r := <-done:
		t.Fatalf("returned before SIGTERM: %+v", r)
	case <-time.After(20 * time.Millisecond):
	}
	t0 := time.Now()
	sigs <- syscall.SIGTERM
	r := wait(t, done)
	if r.code != 0 || time.Since(t0) < 50*time.Millisecond {
		t.Fatalf("trap-term: status %d after %v, want 0 after >= 50ms", r.code, time.Since(t0))
	}
	if l := out.next(t); !strings.Contains(l, "got SIGTERM") {
		t.Fatalf("second line = %q", l)
	}
}

func TestExit(t *testing.T) {
	_, _, done := start(t, "exit", "--code", "7")
	if r := wait(t, done); r.code != 7 {
		t.Fatalf("exit status %d, want 7", r.code)
	}
	_, _, done = start(t, "exit", "--code", "0", "--after", "30ms")
	if r := wait(t, done); r.code != 0 || r.elapsed < 30*time.Millisecond {
		t.Fatalf("exit --after 30ms: %+v", r)
	}
	_, sigs, done := start(t, "exit", "--code", "4", "--after", "1h")
	sigs <- syscall.SIGTERM
	if r := wait(t, done); r.code != 4 {
		t.Fatalf("exit status after SIGTERM %d, want 4", r.code)
	}
}

func TestUsageErrorExitsTwo(t *testing.T) {
	_, _, done := start(t, "sleep", "--bogus")
	if r := wait(t, done); r.code != 2 {
		t.Fatalf("exit status %d, want 2", r.code)
	}
}

func TestAlloc(t *testing.T) {
	out, _, done := start(t, "alloc", "--mib", "3")
	out.next(t)
	if l := out.next(t); l != "testbox alloc: allocated 3 MiB" {
		t.Fatalf("done line = %q", l)
	}
	if r := wait(t, done); r.code != 0 {
		t.Fatalf("exit status %d", r.code)
	}

	// 4 MiB at 200 MiB/s: one chunk per 5 ms, so at least ~20 ms.
	out, sigs, done := start(t, "alloc", "--mib", "4", "--rate", "200", "--hold")
	out.next(t)
	t0 := time.Now()
	if l := out.next(t); l != "testbox alloc: allocated 4 MiB" {
		t.Fatalf("done line = %q", l)
	}
	if e := time.Since(t0); e < 15*time.Millisecond {
		t.Fatalf("rate-limited allocation took %v, want >= 15ms", e)
	}
	select {
	case r := <-done:
		t.Fatalf("--hold returned before a signal: %+v", r)
	case <-time.After(20 * time.Millisecond):
	}
	sigs <- syscall.SIGTERM
	if r := wait(t, done); r.code != 0 {
		t.Fatalf("exit status %d", r.code)
	}

	// --first 2 of 3 MiB at 1 MiB/s: the third chunk waits a whole tick,
	// the first two none (a slow leak that starts from a plateau).
	out, _, done = start(t, "alloc", "--mib", "3", "--first", "2", "--rate", "1")
	out.next(t)
	t0 = time.Now()
	if l := out.next(t); l != "testbox alloc: allocated 3 MiB" {
		t.Fatalf("done line = %q", l)
	}
	if e := time.Since(t0); e < 900*time.Millisecond {
		t.Fatalf("the chunk after --first came after %v, want a tick of ~1s", e)
	}
	if r := wait(t, done); r.code != 0 {
		t.Fatalf("exit status %d", r.code)
	}
}

func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	out, _, done := start(t, "write", "--mib", "2", "--file", path, "--sync")
	out.next(t)
	if r := wait(t, done); r.code != 0 {
		t.Fatalf("exit status %d", r.code)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 2*mib {
		t.Fatalf("file size %d, want %d", fi.Size(), 2*mib)
	}
	out, sigs, done := start(t, "write", "--mib", "1", "--file", path, "--reread")
	out.next(t) // start
	out.next(t) // wrote
	if line := out.next(t); !strings.Contains(line, "read the file 1 times") {
		t.Fatalf("reread: %q", line)
	}
	sigs <- syscall.SIGTERM
	if r := wait(t, done); r.code != 0 {
		t.Fatalf("reread: exit status %d", r.code)
	}
	// A paced write stops at a signal, before it wrote everything.
	out, sigs, done = start(t, "write", "--mib", "1000", "--rate", "1", "--file", path)
	out.next(t)
	sigs <- syscall.SIGTERM
	if r := wait(t, done); r.code != 0 {
		t.Fatalf("paced write: exit status %d", r.code)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() >= 1000*mib {
		t.Fatalf("paced write after SIGTERM: %v, %v; want a shorter file", fi, err)
	}
	_, _, done = start(t, "write", "--mib", "1", "--file", filepath.Join(path, "not-a-dir", "x"))
	if r := wait(t, done); r.code != 1 {
		t.Fatalf("write into a missing dir: exit status %d, want 1", r.code)
	}
}

// listenAddr takes the address from a serve start line.
func listenAddr(t *testing.T, line, key string) string {
	t.Helper()
	i := strings.Index(line, key+"=")
	if i < 0 {
		t.Fatalf("no %s= in %q", key, line)
	}
	return strings.Fields(line[i+len(key)+1:])[0]
}

func TestServeHTTP(t *testing.T) {
	out, sigs, done := start(t, "serve", "--http", "127.0.0.1:0")
	addr := listenAddr(t, out.next(t), "http")
	for _, p := range []string{"/", "/healthz"} {
		resp, err := http.Get("http://" + addr + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "ok" {
			t.Fatalf("GET %s = %d %q, want 200 \"ok\"", p, resp.StatusCode, body)
		}
	}
	sigs <- syscall.SIGTERM
	if r := wait(t, done); r.code != 0 {
		t.Fatalf("exit status %d", r.code)
	}
}

func TestServeTCPEchoes(t *testing.T) {
	out, sigs, done := start(t, "serve", "--tcp", "127.0.0.1:0")
	addr := listenAddr(t, out.next(t), "tcp")
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || got != "hello\n" {
		t.Fatalf("echo = %q, %v", got, err)
	}
	sigs <- syscall.SIGTERM
	if r := wait(t, done); r.code != 0 {
		t.Fatalf("exit status %d", r.code)
	}
}

func TestServeBadAddress(t *testing.T) {
	_, _, done := start(t, "serve", "--tcp", "256.0.0.1:1")
	if r := wait(t, done); r.code != 1 {
		t.Fatalf("exit status %d, want 1", r.code)
	}
}

// process runs this test binary as testbox in a child process.
type process struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan struct{}
	state *os.ProcessState
}

func startProcess(t *testing.T, args ...string) *process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "TESTBOX_AS_MAIN=1")
	cmd.Stderr = testWriter{t}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, lines: make(chan string, 16), done: make(chan struct{})}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.done)
	}()
	return p
}

func (p *process) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatal("process closed stdout")
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no output line within 10s")
		return ""
	}
}

func (p *process) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.state.ExitCode()
	case <-time.After(10 * time.Second):
		t.Fatal("process did not exit within 10s")
		return -1
	}
}

func TestProcessSignals(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process modes are tested on Linux")
	}
	for _, mode := range []string{"sleep", "pause"} {
		t.Run(mode, func(t *testing.T) {
			p := startProcess(t, mode)
			if l := p.line(t); !strings.HasPrefix(l, "testbox "+mode+": pid=") {
				t.Fatalf("start line = %q", l)
			}
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit status %d after SIGTERM, want 0", code)
			}
		})
	}
	t.Run("exit code", func(t *testing.T) {
		p := startProcess(t, "exit", "--code", "3")
		p.line(t)
		if code := p.wait(t); code != 3 {
			t.Fatalf("exit status %d, want 3", code)
		}
	})
}

func TestFork(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("fork is tested on Linux")
	}
	p := startProcess(t, "fork", "--n", "2")
	p.line(t)
	l := p.line(t)
	list, ok := strings.CutPrefix(l, "testbox fork: children ")
	if !ok {
		t.Fatalf("children line = %q", l)
	}
	var pids []int
	for _, s := range strings.Split(list, ",") {
		pid, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("children line = %q: %v", l, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 2 {
		t.Fatalf("%d children, want 2", len(pids))
	}
	for _, pid := range pids {
		ppid := parentOf(t, pid)
		if ppid != p.cmd.Process.Pid {
			t.Fatalf("child %d has parent %d, want %d", pid, ppid, p.cmd.Process.Pid)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit status %d, want 0", code)
	}
	for _, pid := range pids {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil && parentOf(t, pid) == p.cmd.Process.Pid {
			t.Fatalf("child %d still running", pid)
		}
	}
}

// parentOf reads the parent pid of pid from /proc (0 when it is gone).
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// serve --grpc answers the gRPC health protocol: SERVING, then NOT_SERVING
// once --fail-after passed.
func TestServeGRPCHealth(t *testing.T) {
	out, sigs, done := start(t, "serve", "--grpc", "127.0.0.1:0", "--fail-after", "2s")
	addr := listenAddr(t, out.next(t), "grpc")
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	check := func() healthpb.HealthCheckResponse_ServingStatus {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetStatus()
	}
	if s := check(); s != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("status %v, want SERVING", s)
	}
	deadline := time.Now().Add(20 * time.Second)
	for check() != healthpb.HealthCheckResponse_NOT_SERVING {
		if time.Now().After(deadline) {
			t.Fatal("never NOT_SERVING after --fail-after")
		}
		time.Sleep(100 * time.Millisecond)
	}
	sigs <- syscall.SIGTERM
	if r := wait(t, done); r.code != 0 {
		t.Fatalf("exit status %d", r.code)
	}
}

// serve --https answers over TLS with a self-signed certificate and logs
// each request; --fail-after turns it to 503.
func TestServeHTTPSFailAfter(t *testing.T) {
	out, sigs, done := start(t, "serve", "--https", "127.0.0.1:0", "--fail-after", "1s")
	addr := listenAddr(t, out.next(t), "https")
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test server
	resp, err := client.Get("https://" + addr + "/hook?x=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if line := out.next(t); !strings.Contains(line, "GET /hook?x=1") {
		t.Fatalf("request log %q", line)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := client.Get("https://" + addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never 503 after --fail-after")
		}
		time.Sleep(100 * time.Millisecond)
	}
	sigs <- syscall.SIGTERM
	if r := wait(t, done); r.code != 0 {
		t.Fatalf("exit status %d", r.code)
	}
}

// fork --exec runs the given program in each child, --rate paces them.
func TestForkExecAtARate(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("fork is tested on Linux")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep program")
	}
	start := time.Now()
	p := startProcess(t, "fork", "--n", "3", "--rate", "20", "--exec", sleep+" 3600")
	p.line(t)
	l := p.line(t)
	list, ok := strings.CutPrefix(l, "testbox fork: children ")
	if !ok {
		t.Fatalf("children line = %q", l)
	}
	// Three children at 20/s: the third waits for the third tick.
	if e := time.Since(start); e < 140*time.Millisecond {
		t.Fatalf("three children at 20/s started within %v", e)
	}
	pids := strings.Split(list, ",")
	if len(pids) != 3 {
		t.Fatalf("children %q, want 3", list)
	}
	for _, pid := range pids {
		cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err != nil || !strings.HasPrefix(string(cmdline), sleep+"\x003600") {
			t.Fatalf("child %s runs %q (%v), want %s 3600", pid, cmdline, err, sleep)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit status %d, want 0", code)
	}
}

// alloc --term-after: a signal starts a shutdown of that long during which
// the allocation goes on; then it exits 0.
func TestAllocTermAfter(t *testing.T) {
	out, sigs, done := start(t, "alloc", "--mib", "1000", "--rate", "100", "--term-after", "300ms")
	out.next(t)
	t0 := time.Now()
	sigs <- syscall.SIGTERM
	if l := out.next(t); l != "testbox alloc: signalled, going on for 300ms" {
		t.Fatalf("line after the signal = %q", l)
	}
	r := wait(t, done)
	if r.code != 0 {
		t.Fatalf("exit status %d", r.code)
	}
	if e := time.Since(t0); e < 250*time.Millisecond {
		t.Fatalf("exited %v after the signal, want ~300ms", e)
	}
	// Held memory too: the shutdown starts at the signal.
	out, sigs, done = start(t, "alloc", "--mib", "1", "--hold", "--term-after", "100ms")
	out.next(t)
	out.next(t)
	sigs <- syscall.SIGTERM
	if l := out.next(t); l != "testbox alloc: signalled, going on for 100ms" {
		t.Fatalf("line after the signal = %q", l)
	}
	if r := wait(t, done); r.code != 0 {
		t.Fatalf("exit status %d", r.code)
	}
}

// write --leave stops at the margin and --mark logs the crossing: with
// both far above what the test's filesystem has free, after the first MiB.
func TestWriteLeave(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("statfs: Linux only")
	}
	path := filepath.Join(t.TempDir(), "data")
	huge := strconv.Itoa(1 << 40)
	out, _, done := start(t, "write", "--mib", "50", "--file", path, "--leave", huge, "--mark", huge)
	out.next(t) // start
	if line := out.next(t); !strings.Contains(line, "available") || !strings.Contains(line, "< "+huge+" MiB at ") {
		t.Fatalf("mark: %q", line)
	}
	if line := out.next(t); !strings.Contains(line, "(--leave) at ") {
		t.Fatalf("leave: %q", line)
	}
	if line := out.next(t); !strings.Contains(line, "wrote 1 MiB") {
		t.Fatalf("end: %q", line)
	}
	if r := wait(t, done); r.code != 0 {
		t.Fatalf("exit status %d", r.code)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != mib {
		t.Fatalf("file: %v %v, want 1 MiB", fi, err)
	}
}
