package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
)

// ListenTLS binds addr now and serves HTTPS with cfg on it.
func ListenTLS(ctx context.Context, name, addr string, h http.Handler, cfg *tls.Config) (*Listener, error) {
	l, err := Listen(ctx, name, addr, h)
	if err != nil {
		return nil, err
	}
	l.ln = tls.NewListener(l.ln, cfg)
	l.srv.TLSConfig = cfg
	return l, nil
}

// maxUnixPath is the longest path a Unix socket can have on Linux
// (sun_path is 108 bytes with the terminating NUL).
const maxUnixPath = 107

// ListenUnix binds a Unix socket at path (replacing a stale one), readable
// and writable by the owner only, and serves plain HTTP on it.
func ListenUnix(ctx context.Context, name, path string, h http.Handler) (*Listener, error) {
	if len(path) > maxUnixPath {
		return nil, fmt.Errorf("%s server: socket path %s is longer than %d bytes", name, path, maxUnixPath)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() == fs.ModeSocket {
		_ = os.Remove(path) // a socket left by an agent that died
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", name, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, errors.Join(fmt.Errorf("%s server: %w", name, err), ln.Close())
	}
	return newListener(ctx, name, ln, h), nil
}
