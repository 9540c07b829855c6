package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kernelet/kernelet/internal/top"
)

// topFlags are `kernelet top`'s flags.
type topFlags struct {
	addr agentAddr
	sort string
}

// topCommand: `kernelet top` shows the node's memory pressure and its pods
// live in the terminal, from the agent's dashboard event stream: by
// default through the local socket (<root-dir>/kernelet.sock, root only),
// or --server: the read-only port (http://HOST:10255) or the kubelet API
// (https://HOST:10250, with --token or --client-certificate/--client-key;
// the path is the nodes/proxy subresource).
func topCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("top", stderr)
	var f topFlags
	fs.StringVar(&f.sort, "sort", "m", "initial order: m (memory), p (PSI), o (OOM kills), n (name)")
	f.addr.register(fs, "the agent's URL: unix:///path/to/kernelet.sock, http://host:readOnlyPort or https://host:port")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kernelet top: unexpected arguments %q\n", fs.Args())
		return 2
	}
	key, ok := top.SortKeys[f.sort]
	if !ok {
		fmt.Fprintf(stderr, "kernelet top: --sort %q: want m, p, o or n\n", f.sort)
		return 2
	}
	base, client, err := f.addr.client()
	if err != nil {
		fmt.Fprintf(stderr, "kernelet top: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	source := f.addr.server
	if source == "" {
		source = f.addr.base()
	}
	if sock, ok := strings.CutPrefix(base, "unix://"); ok {
		base, client = "http://kernelet", unixClient(sock)
	}
	if err := top.Run(ctx, top.Options{Base: base, Source: source, Client: client, In: os.Stdin, Out: stdout, Sort: key}); err != nil {
		fmt.Fprintf(stderr, "kernelet top: %v\n", err)
		return 1
	}
	return 0
}
