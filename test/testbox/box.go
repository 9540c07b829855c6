package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const mib = 1 << 20

// errUsage marks command-line errors (exit status 2).
var errUsage = errors.New("usage")

const usageText = `usage: testbox <mode> [flags]
modes:
  sleep [--for D]
  pause
  trap-term [--exit-after D]
  alloc --mib N [--first N] [--rate MiB/s] [--hold] [--term-after D]
  fork --n N [--rate N/s] [--exec 'PROG ARGS'] [--for D]
  write --mib N --file PATH [--rate MiB/s] [--leave MiB] [--mark MiB] [--sync] [--reread] [--hold]
  serve --http ADDR | --https ADDR | --grpc ADDR | --tcp ADDR [--fail-after D]
  exit --code N [--after D]
  fetch --url URL [--bearer-file F] [--ca-file F] [--post-data S]
`

// config is one parsed command line.
type config struct {
	mode      string
	duration  time.Duration // sleep/fork --for (0: forever), trap-term --exit-after, exit --after
	mib       int           // alloc, write
	first     int           // alloc: MiB allocated at once before --rate applies
	termAfter time.Duration // alloc: on a signal go on this long before exiting
	rate      float64       // alloc: MiB per second, 0 = at once
	hold      bool          // alloc: keep the memory until signalled; write: keep running
	n         int           // fork: children
	file      string        // write
	sync      bool          // write: fsync at the end
	reread    bool          // write: read the file again and again until signalled
	leave     int           // write: stop once the file's filesystem has no more than this many MiB available (0: off)
	mark      int           // write: log the time the available space first falls under this many MiB (0: off)
	httpAddr  string        // serve
	tcpAddr   string        // serve
	httpsAddr string        // serve: HTTPS with a self-signed certificate
	grpcAddr  string        // serve: the gRPC health service (h2c)
	failAfter time.Duration // serve: from then on HTTP answers 503, gRPC NOT_SERVING (0: never)
	exitCode  int           // exit
	url       string        // fetch
	bearer    string        // fetch: file holding a bearer token
	caFile    string        // fetch: CA bundle to verify the server with
	postData  string        // fetch: POST this JSON instead of GET
	childArgs []string      // fork: what each child runs
	childProg string        // fork: the child's program ("": testbox itself)
	execLine  string        // fork --exec: "PROG ARGS…" of each child
}

// parse turns args (without the program name) into a config. Errors wrap
// errUsage.
func parse(args []string) (*config, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%w: no mode given", errUsage)
	}
	c := &config{mode: args[0]}
	fs := flag.NewFlagSet("testbox "+c.mode, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	switch c.mode {
	case "sleep":
		fs.DurationVar(&c.duration, "for", 0, "how long to sleep (0: forever)")
	case "pause":
	case "trap-term":
		fs.DurationVar(&c.duration, "exit-after", 0, "delay between SIGTERM and exit")
	case "alloc":
		fs.IntVar(&c.mib, "mib", 0, "MiB to allocate")
		fs.IntVar(&c.first, "first", 0, "MiB to allocate at once before --rate applies")
		fs.Float64Var(&c.rate, "rate", 0, "MiB per second (0: at once)")
		fs.BoolVar(&c.hold, "hold", false, "keep the memory until signalled")
		fs.DurationVar(&c.termAfter, "term-after", 0, "on a signal, go on (allocating or holding) this long before exiting")
	case "fork":
		fs.IntVar(&c.n, "n", 0, "child processes")
		fs.Float64Var(&c.rate, "rate", 0, "children started per second (0: at once)")
		fs.StringVar(&c.execLine, "exec", "", "each child's program and arguments, space-separated (default: testbox sleep)")
		fs.DurationVar(&c.duration, "for", 0, "how long to run (0: forever)")
	case "write":
		fs.IntVar(&c.mib, "mib", 0, "MiB to write")
		fs.StringVar(&c.file, "file", "", "file to write")
		fs.BoolVar(&c.sync, "sync", false, "fsync the file at the end")
		fs.Float64Var(&c.rate, "rate", 0, "MiB written per second (0: as fast as possible)")
		fs.BoolVar(&c.reread, "reread", false, "then read the file again and again until signalled")
		fs.BoolVar(&c.hold, "hold", false, "then keep running until signalled")
		fs.IntVar(&c.leave, "leave", 0, "stop writing once the filesystem has no more than this many MiB available (0: off)")
		fs.IntVar(&c.mark, "mark", 0, "log when the filesystem's available MiB first fall under this (0: off)")
	case "serve":
		fs.StringVar(&c.httpAddr, "http", "", "HTTP listen address")
		fs.StringVar(&c.tcpAddr, "tcp", "", "TCP echo listen address")
		fs.StringVar(&c.httpsAddr, "https", "", "HTTPS listen address (self-signed certificate)")
		fs.StringVar(&c.grpcAddr, "grpc", "", "gRPC health service listen address (plaintext HTTP/2)")
		fs.DurationVar(&c.failAfter, "fail-after", 0, "fail health checks from this long after the start (0: never)")
	case "exit":
		fs.IntVar(&c.exitCode, "code", -1, "exit status (0-255)")
		fs.DurationVar(&c.duration, "after", 0, "delay before exiting")
	case "fetch":
		fs.StringVar(&c.url, "url", "", "URL to fetch")
		fs.StringVar(&c.bearer, "bearer-file", "", "file holding a bearer token")
		fs.StringVar(&c.caFile, "ca-file", "", "CA bundle that verifies the server")
		fs.StringVar(&c.postData, "post-data", "", "JSON to POST")
	case "help", "-h", "--help":
		return nil, fmt.Errorf("%w: help requested", errUsage)
	default:
		return nil, fmt.Errorf("%w: unknown mode %q", errUsage, c.mode)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errUsage, c.mode, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: %s: unexpected arguments %q", errUsage, c.mode, fs.Args())
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errUsage, c.mode, err)
	}
	if c.mode == "fork" {
		c.childArgs = []string{"sleep"}
		if f := strings.Fields(c.execLine); len(f) > 0 {
			c.childProg, c.childArgs = f[0], f[1:]
		}
	}
	return c, nil
}

func (c *config) validate() error {
	if c.duration < 0 {
		return fmt.Errorf("negative duration %v", c.duration)
	}
	switch c.mode {
	case "alloc":
		if c.mib <= 0 {
			return errors.New("--mib must be > 0")
		}
		if c.rate < 0 {
			return errors.New("--rate must be >= 0")
		}
		if c.first < 0 || c.first > c.mib {
			return errors.New("--first must be between 0 and --mib")
		}
	case "fork":
		if c.n <= 0 {
			return errors.New("--n must be > 0")
		}
		if c.rate < 0 {
			return errors.New("--rate must be >= 0")
		}
	case "write":
		if c.mib < 0 {
			return errors.New("--mib must be >= 0")
		}
		if c.file == "" {
			return errors.New("--file is required")
		}
		if c.rate < 0 {
			return errors.New("--rate must be >= 0")
		}
		if c.leave < 0 || c.mark < 0 {
			return errors.New("--leave and --mark must be >= 0")
		}
	case "serve":
		n := 0
		for _, a := range []string{c.httpAddr, c.httpsAddr, c.grpcAddr, c.tcpAddr} {
			if a != "" {
				n++
			}
		}
		if n != 1 {
			return errors.New("exactly one of --http, --https, --grpc and --tcp is required")
		}
		if c.failAfter < 0 {
			return errors.New("--fail-after must be >= 0")
		}
	case "exit":
		if c.exitCode < 0 || c.exitCode > 255 {
			return errors.New("--code must be 0..255")
		}
	case "fetch":
		if c.url == "" {
			return errors.New("--url is required")
		}
	}
	return nil
}

// box runs one mode. Signals arrive on sigs (SIGTERM and SIGINT only), so
// tests can deliver them without touching the test process.
type box struct {
	stdout io.Writer
	stderr io.Writer
	sigs   <-chan os.Signal
	// self is the executable fork re-executes; empty means os.Executable().
	self string

	outMu sync.Mutex
}

func (b *box) logf(format string, args ...any) {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	fmt.Fprintf(b.stdout, format+"\n", args...)
}

// run parses args and runs the mode; it returns the exit status.
func (b *box) run(args []string) int {
	c, err := parse(args)
	if err != nil {
		fmt.Fprintf(b.stderr, "testbox: %v\n%s", err, usageText)
		return 2
	}
	code, err := b.runMode(c)
	if err != nil {
		fmt.Fprintf(b.stderr, "testbox %s: %v\n", c.mode, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func (b *box) runMode(c *config) (int, error) {
	switch c.mode {
	case "sleep":
		return b.sleep(c)
	case "pause":
		return b.pause()
	case "trap-term":
		return b.trapTerm(c)
	case "alloc":
		return b.alloc(c)
	case "fork":
		return b.fork(c)
	case "write":
		return b.write(c)
	case "serve":
		return b.serve(c)
	case "exit":
		return b.exit(c)
	case "fetch":
		return b.fetch(c)
	}
	return 2, fmt.Errorf("unknown mode %q", c.mode)
}

// after returns a channel that fires after d, or never when d is 0.
func after(d time.Duration) <-chan time.Time {
	if d <= 0 {
		return nil
	}
	return time.After(d)
}

func forever(d time.Duration) string {
	if d <= 0 {
		return "forever"
	}
	return d.String()
}

func (b *box) sleep(c *config) (int, error) {
	b.logf("testbox sleep: pid=%d for=%s", os.Getpid(), forever(c.duration))
	select {
	case <-after(c.duration):
	case <-b.sigs:
	}
	return 0, nil
}

func (b *box) pause() (int, error) {
	b.logf("testbox pause: pid=%d", os.Getpid())
	stop := startReaper()
	defer stop()
	<-b.sigs
	return 0, nil
}

func (b *box) trapTerm(c *config) (int, error) {
	b.logf("testbox trap-term: pid=%d exit-after=%s", os.Getpid(), c.duration)
	if sig := <-b.sigs; sig == syscall.SIGTERM {
		b.logf("testbox trap-term: got SIGTERM, exiting in %s", c.duration)
		time.Sleep(c.duration)
	}
	return 0, nil
}

// alloc allocates c.mib MiB in 1 MiB chunks and writes one byte per page so
// every page is resident, not just reserved.
func (b *box) alloc(c *config) (int, error) {
	b.logf("testbox alloc: pid=%d mib=%d first=%d rate=%g hold=%t", os.Getpid(), c.mib, c.first, c.rate, c.hold)
	page := os.Getpagesize()
	chunks := make([][]byte, 0, c.mib)
	grow := func() {
		chunk := make([]byte, mib)
		for i := 0; i < len(chunk); i += page {
			chunk[i] = 1
		}
		chunks = append(chunks, chunk)
	}
	for len(chunks) < c.first {
		grow()
	}
	var tick <-chan time.Time
	if c.rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / c.rate))
		defer t.Stop()
		tick = t.C
	}
	// A signal ends it, or with --term-after starts that long a shutdown
	// during which it goes on as before (an application slow to stop
	// whose memory still grows).
	sigs := b.sigs
	var stopping <-chan time.Time
	signalled := func() bool {
		if c.termAfter <= 0 {
			return true
		}
		b.logf("testbox alloc: signalled, going on for %v", c.termAfter)
		sigs, stopping = nil, time.After(c.termAfter)
		return false
	}
	for len(chunks) < c.mib {
		if tick != nil {
			select {
			case <-tick:
			case <-sigs:
				if signalled() {
					return 0, nil
				}
			case <-stopping:
				return 0, nil
			}
		}
		grow()
	}
	b.logf("testbox alloc: allocated %d MiB", len(chunks))
	if c.hold {
		select {
		case <-sigs:
			if !signalled() {
				<-stopping
			}
		case <-stopping:
		}
	}
	// Keep the chunks reachable until here.
	if len(chunks) > 0 && chunks[0][0] != 1 {
		return 1, errors.New("memory lost")
	}
	return 0, nil
}

// fork starts c.n children (itself in sleep mode, or --exec's program),
// --rate per second or at once, and waits; on a signal (or after --for,
// counted from the start) it stops the children and exits 0.
func (b *box) fork(c *config) (int, error) {
	self := cmp.Or(c.childProg, b.self)
	if self == "" {
		exe, err := os.Executable()
		if err != nil {
			return 1, fmt.Errorf("find own executable: %w", err)
		}
		self = exe
	}
	b.logf("testbox fork: pid=%d n=%d rate=%g for=%s", os.Getpid(), c.n, c.rate, forever(c.duration))
	end := after(c.duration)
	var tick <-chan time.Time
	if c.rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / c.rate))
		defer t.Stop()
		tick = t.C
	}
	var children []*exec.Cmd
	stopAll := func() {
		for _, ch := range children {
			_ = ch.Process.Signal(syscall.SIGTERM)
		}
		for _, ch := range children {
			_ = ch.Wait()
		}
	}
	for i := 0; i < c.n; i++ {
		if tick != nil {
			select {
			case <-tick:
			case <-end:
				stopAll()
				return 0, nil
			case <-b.sigs:
				stopAll()
				return 0, nil
			}
		}
		cmd := exec.Command(self, c.childArgs...)
		cmd.Stdout = io.Discard
		cmd.Stderr = b.stderr
		cmd.SysProcAttr = childSysProcAttr()
		if err := cmd.Start(); err != nil {
			stopAll()
			return 1, fmt.Errorf("start child %d: %w", i, err)
		}
		children = append(children, cmd)
	}
	pids := make([]string, len(children))
	for i, ch := range children {
		pids[i] = strconv.Itoa(ch.Process.Pid)
	}
	b.logf("testbox fork: children %s", strings.Join(pids, ","))
	select {
	case <-end:
	case <-b.sigs:
	}
	stopAll()
	return 0, nil
}

func (b *box) write(c *config) (int, error) {
	b.logf("testbox write: pid=%d mib=%d file=%s sync=%t rate=%g", os.Getpid(), c.mib, c.file, c.sync, c.rate)
	f, err := os.OpenFile(c.file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 1, fmt.Errorf("open: %w", err)
	}
	block := make([]byte, mib)
	for i := range block {
		block[i] = byte(i%251) + 1 // not zeros: nothing may turn it into a hole
	}
	var tick <-chan time.Time
	if c.rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / c.rate))
		defer t.Stop()
		tick = t.C
	}
	written, marked := 0, false
	for ; written < c.mib; written++ {
		if tick != nil {
			select {
			case <-tick:
			case <-b.sigs:
				f.Close()
				return 0, nil
			}
		}
		if _, err := f.Write(block); err != nil {
			f.Close()
			return 1, fmt.Errorf("write: %w", err)
		}
		if c.leave == 0 && c.mark == 0 {
			continue
		}
		avail, err := availableMiB(c.file)
		if err != nil {
			f.Close()
			return 1, fmt.Errorf("statfs: %w", err)
		}
		if c.mark > 0 && !marked && avail < int64(c.mark) {
			marked = true
			b.logf("testbox write: available %d MiB < %d MiB at %s", avail, c.mark, unixTime(time.Now()))
		}
		if c.leave > 0 && avail <= int64(c.leave) {
			written++
			b.logf("testbox write: stopped: available %d MiB <= %d MiB (--leave) at %s", avail, c.leave, unixTime(time.Now()))
			break
		}
	}
	if c.sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return 1, fmt.Errorf("fsync: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return 1, fmt.Errorf("close: %w", err)
	}
	b.logf("testbox write: wrote %d MiB", written)
	switch {
	case c.reread:
		return b.reread(c.file)
	case c.hold:
		<-b.sigs
	}
	return 0, nil
}

// unixTime is t as seconds since the epoch with microseconds
// ("1795978400.250000"), the form of bash's $EPOCHREALTIME.
func unixTime(t time.Time) string {
	return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
}

// reread reads file from start to end again and again (its page cache
// turns active) until a signal, then exits 0.
func (b *box) reread(file string) (int, error) {
	buf := make([]byte, mib)
	for n := 1; ; n++ {
		f, err := os.Open(file)
		if err != nil {
			return 1, fmt.Errorf("reread: %w", err)
		}
		_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
		f.Close()
		if err != nil {
			return 1, fmt.Errorf("reread: %w", err)
		}
		if n == 1 || n%100 == 0 {
			b.logf("testbox write: read the file %d times", n)
		}
		select {
		case <-b.sigs:
			return 0, nil
		default:
		}
	}
}

func (b *box) serve(c *config) (int, error) {
	var addr, kind string
	for _, a := range [][2]string{{c.httpAddr, "http"}, {c.httpsAddr, "https"}, {c.grpcAddr, "grpc"}, {c.tcpAddr, "tcp"}} {
		if a[0] != "" {
			addr, kind = a[0], a[1]
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return 1, fmt.Errorf("listen: %w", err)
	}
	done := make(chan error, 1)
	if kind == "tcp" {
		b.logf("testbox serve: pid=%d tcp=%s", os.Getpid(), ln.Addr())
		go func() { done <- echo(ln) }()
		select {
		case <-b.sigs:
			_ = ln.Close()
			return 0, nil
		case err := <-done:
			return 1, fmt.Errorf("serve tcp: %w", err)
		}
	}
	srv, err := b.server(kind, c.failAfter)
	if err != nil {
		return 1, err
	}
	b.logf("testbox serve: pid=%d %s=%s", os.Getpid(), kind, ln.Addr())
	go func() {
		if kind == "https" {
			done <- srv.ServeTLS(ln, "", "")
		} else {
			done <- srv.Serve(ln)
		}
	}()
	select {
	case <-b.sigs:
		_ = srv.Close()
		return 0, nil
	case err := <-done:
		return 1, fmt.Errorf("serve %s: %w", kind, err)
	}
}

// echo accepts connections until ln is closed and echoes what each sends.
func echo(ln net.Listener) error {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer conn.Close()
			_, _ = io.Copy(conn, conn)
		}()
	}
}

func (b *box) exit(c *config) (int, error) {
	b.logf("testbox exit: pid=%d code=%d after=%s", os.Getpid(), c.exitCode, c.duration)
	if c.duration > 0 {
		select {
		case <-time.After(c.duration):
		case <-b.sigs:
		}
	}
	return c.exitCode, nil
}
