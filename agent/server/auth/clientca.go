package auth

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// Timings of the client CA file's reload.
const (
	// clientCAResync is how often Run re-reads the file whatever the
	// watch reports (a change it missed, a watch that could not be set
	// up).
	clientCAResync = time.Minute
	// clientCASettle is how long the file's events must have stopped
	// before it is re-read, so that a file being written is read once,
	// whole.
	clientCASettle = 100 * time.Millisecond
)

// ClientCA is the client CA bundle of authentication.x509.clientCAFile,
// read when made and re-read by Run when the file changes: written in
// place, replaced (renamed over, or a Kubernetes volume's symlink swap)
// or recreated; and every minute in any case. A re-read that fails (the
// file missing, empty or without a certificate) keeps the bundle in use.
type ClientCA struct {
	path   string
	resync time.Duration
	cur    atomic.Pointer[caBundle]
}

// caBundle is a bundle as read and the options that verify against it.
type caBundle struct {
	pem  []byte
	opts x509.VerifyOptions
}

// errEmptyCABundle: the client CA file is empty.
var errEmptyCABundle = errors.New("empty CA bundle")

// NewClientCA reads the bundle at path; an unreadable or empty file, or
// one without a PEM certificate, is an error.
func NewClientCA(path string) (*ClientCA, error) {
	c := &ClientCA{path: path, resync: clientCAResync}
	if _, err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// VerifyOptions are the options a client certificate chain is verified
// with: the bundle's certificates as the roots, the client-auth key
// usage. ok is false only for a ClientCA that never read a bundle.
func (c *ClientCA) VerifyOptions() (opts x509.VerifyOptions, ok bool) {
	b := c.cur.Load()
	if b == nil {
		return x509.VerifyOptions{}, false
	}
	return b.opts, true
}

// Reload re-reads the file and tells whether the bundle changed; a
// failed read keeps the bundle in use.
func (c *ClientCA) Reload() (changed bool, err error) {
	data, err := os.ReadFile(c.path)
	if err != nil {
		return false, fmt.Errorf("read the client CA file: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return false, fmt.Errorf("client CA file %s: %w", c.path, errEmptyCABundle)
	}
	if old := c.cur.Load(); old != nil && bytes.Equal(old.pem, data) {
		return false, nil
	}
	roots, err := certutil.NewPoolFromBytes(data)
	if err != nil {
		return false, fmt.Errorf("client CA file %s: %w", c.path, err)
	}
	c.cur.Store(&caBundle{pem: data, opts: x509.VerifyOptions{
		Roots:     roots,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}})
	return true, nil
}

// Run re-reads the file when it changes, as ClientCA describes, until
// ctx is done. It watches the file and its directory (a replaced file
// shows up as an entry of the directory created or renamed).
func (c *ClientCA) Run(ctx context.Context) {
	log := klog.FromContext(ctx).WithValues("file", c.path)
	var events <-chan fsnotify.Event
	var errs <-chan error
	w, err := fsnotify.NewWatcher()
	if err != nil {
		log.Error(err, "Unable to watch the client CA file; re-reading it periodically only", "period", c.resync)
	} else {
		defer func() { _ = w.Close() }()
		if err := w.Add(filepath.Dir(c.path)); err != nil {
			log.Error(err, "Unable to watch the client CA file's directory; a replaced file is seen by the periodic re-read only", "period", c.resync)
		}
		_ = w.Add(c.path) // follows a symlink to the file it names
		events, errs = w.Events, w.Errors
	}
	tick := time.NewTicker(c.resync)
	defer tick.Stop()
	c.reload(log) // a change since NewClientCA
	// settled fires once the file's events have stopped for
	// clientCASettle: each event re-arms it.
	var settled <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if c.concerns(e) {
				if e.Has(fsnotify.Create | fsnotify.Remove | fsnotify.Rename) {
					_ = w.Add(c.path) // watch the file now there; fails while it is missing
				}
				settled = time.After(clientCASettle)
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			log.Error(err, "Watching the client CA file")
			settled = time.After(clientCASettle)
		case <-settled:
			settled = nil
			c.reload(log)
		case <-tick.C:
			c.reload(log)
		}
	}
}

// concerns tells whether a watch event may have changed the bundle: an
// event on the file itself, or an entry of its directory created,
// removed or renamed (a symlink swap replaces another entry). Other
// files written in the directory do not.
func (c *ClientCA) concerns(e fsnotify.Event) bool {
	return filepath.Clean(e.Name) == filepath.Clean(c.path) || e.Has(fsnotify.Create|fsnotify.Remove|fsnotify.Rename)
}

// reload re-reads the file, logging the outcome.
func (c *ClientCA) reload(log klog.Logger) {
	changed, err := c.Reload()
	switch {
	case err != nil:
		log.Error(err, "Unable to reload the client CA file; the bundle in use is kept")
	case changed:
		log.Info("Reloaded the client CA file")
	}
}
