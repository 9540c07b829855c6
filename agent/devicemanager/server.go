package devicemanager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/kernelet/kernelet/internal/podutil"
)

// registration is the Registration service on kubelet.sock.
type registration struct {
	pluginapi.UnimplementedRegistrationServer
	m *Manager
}

// Register connects to the plugin that asks, as kubelet: the API version
// must be v1beta1 and the resource name an extended resource name.
func (r registration) Register(ctx context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	log := klog.FromContext(r.m.ctx)
	log.Info("Got registration request from device plugin with resource", "resourceName", req.ResourceName)
	r.m.cfg.Metrics.registered(req.ResourceName)
	if !slices.Contains(pluginapi.SupportedVersions[:], req.Version) {
		err := fmt.Errorf(errUnsupportedVersion, req.Version, pluginapi.SupportedVersions)
		log.Error(err, "Bad registration request from device plugin with resource", "resourceName", req.ResourceName)
		return &pluginapi.Empty{}, err
	}
	if !podutil.IsExtendedResourceName(req.ResourceName) {
		err := fmt.Errorf(errInvalidResourceName, req.ResourceName)
		log.Error(err, "Bad registration request from device plugin")
		return &pluginapi.Empty{}, err
	}
	if err := r.m.connect(ctx, req.ResourceName, filepath.Join(r.m.cfg.Dir, req.Endpoint)); err != nil {
		log.Error(err, "Error connecting to device plugin client")
		return &pluginapi.Empty{}, err
	}
	return &pluginapi.Empty{}, nil
}

// serve listens on the registration socket, after removing the stale
// sockets of the directory when cleanup (at start: the checkpoint and
// directories stay).
func (m *Manager) serve(ctx context.Context, cleanup bool) (*grpc.Server, os.FileInfo, error) {
	if err := os.MkdirAll(m.cfg.Dir, 0o750); err != nil {
		return nil, nil, fmt.Errorf("device plugin directory: %w", err)
	}
	if cleanup {
		if err := cleanupSockets(m.cfg.Dir); err != nil {
			return nil, nil, fmt.Errorf("device plugin directory: %w", err)
		}
	}
	path := filepath.Join(m.cfg.Dir, SocketName)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("device plugin registration socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, nil, fmt.Errorf("device plugin registration socket: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		_ = ln.Close()
		return nil, nil, fmt.Errorf("device plugin registration socket: %w", err)
	}
	s := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(s, registration{m: m})
	go func() {
		if err := s.Serve(ln); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Error while serving device plugin registration grpc server")
		}
	}()
	klog.FromContext(ctx).Info("Serving device plugin registration", "socket", path)
	return s, fi, nil
}

// cleanupSockets removes the sockets in dir (kubelet's
// CleanupPluginDirectory): plugins see kubelet.sock created again and
// register again.
func cleanupSockets(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if e.Type()&fs.ModeSocket == 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sameSocket tells whether path still is the socket fi described.
func sameSocket(path string, fi os.FileInfo) bool {
	now, err := os.Stat(path)
	if err != nil {
		return false
	}
	a, ok1 := fi.Sys().(*syscall.Stat_t)
	b, ok2 := now.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 {
		return os.SameFile(fi, now)
	}
	return a.Ino == b.Ino && a.Dev == b.Dev
}

// runServer serves registrations until ctx ends, listening again when the
// registration socket was deleted or replaced.
func (m *Manager) runServer(ctx context.Context, s *grpc.Server, fi os.FileInfo) {
	period := m.cfg.SocketCheckPeriod
	if period <= 0 {
		period = time.Second
	}
	path := filepath.Join(m.cfg.Dir, SocketName)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.Stop()
			return
		case <-t.C:
		}
		if sameSocket(path, fi) {
			continue
		}
		klog.FromContext(ctx).Info("The device plugin registration socket is gone; serving it again", "socket", path)
		s.Stop()
		ns, nfi, err := m.serve(ctx, false)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Serving the device plugin registration socket again")
			// retried on the next tick: fi no longer matches anything
			continue
		}
		s, fi = ns, nfi
	}
}
