package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strings"
	"sync"
)

// runHostpath parses hostpathplugin's flags and runs the proxy mode.
func runHostpath(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("hostpathplugin", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "unix:///csi/csi.sock", "CSI endpoint")
	proxyEndpoint := fs.String("proxy-endpoint", "", "TCP endpoint that CSI connections are forwarded to")
	fs.Int("v", 0, "log verbosity (unused)")
	// The driver mode's flags (e2e's in-cluster mock driver passes them):
	// known, so that the refusal below names the mode, not a flag.
	for _, name := range []string{"nodeid", "drivername", "statedir", "attach-limit"} {
		fs.String(name, "", "driver mode (not implemented)")
	}
	for _, name := range []string{"enable-attach", "enable-topology", "node-expand-required"} {
		fs.Bool(name, false, "driver mode (not implemented)")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *proxyEndpoint == "" {
		return errors.New("only the -proxy-endpoint mode is implemented: the in-cluster mock driver " +
			"(github.com/kubernetes-csi/csi-driver-host-path) is not on the Go module proxy")
	}
	tcpAddr, ok := strings.CutPrefix(*proxyEndpoint, "tcp://")
	if !ok {
		return fmt.Errorf("-proxy-endpoint %q: only tcp:// is supported", *proxyEndpoint)
	}
	socket := strings.TrimPrefix(*endpoint, "unix://")
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	ul, err := net.Listen("unix", socket)
	if err != nil {
		return fmt.Errorf("listen %s: %w", socket, err)
	}
	tl, err := net.Listen("tcp", tcpAddr)
	if err != nil {
		ul.Close()
		return fmt.Errorf("listen %s: %w", tcpAddr, err)
	}
	log.Printf("proxying %s to the connections accepted on %s", socket, tcpAddr)
	return proxy(ctx, ul, tl)
}

// proxy pairs each connection accepted on local with the next one accepted
// on remote and copies between them, until ctx is done.
func proxy(ctx context.Context, local, remote net.Listener) error {
	remotes := make(chan net.Conn, 64)
	go func() { <-ctx.Done(); local.Close(); remote.Close() }()
	go func() {
		defer close(remotes)
		for {
			c, err := remote.Accept()
			if err != nil {
				return
			}
			remotes <- c
		}
	}()
	for {
		lc, err := local.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		rc, ok := <-remotes
		if !ok {
			lc.Close()
			return errors.New("the TCP endpoint stopped accepting")
		}
		go pipe(lc, rc)
	}
}

// pipe copies both ways and closes both connections when either ends.
func pipe(a, b net.Conn) {
	var once sync.Once
	closeBoth := func() { a.Close(); b.Close() }
	go func() { _, _ = io.Copy(a, b); once.Do(closeBoth) }()
	_, _ = io.Copy(b, a)
	once.Do(closeBoth)
}
