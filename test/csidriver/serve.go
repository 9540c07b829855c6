package csidriver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Server is a driver served on a Unix socket.
type Server struct {
	srv    *grpc.Server
	socket string
	done   chan error
}

// Serve serves d's identity, controller and node services on socket
// (removed first when it exists) until Stop.
func Serve(d *Driver, socket string) (*Server, error) {
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterControllerServer(srv, d)
	csi.RegisterNodeServer(srv, d)
	return serveOn(srv, socket)
}

func serveOn(srv *grpc.Server, socket string) (*Server, error) {
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", socket, err)
	}
	s := &Server{srv: srv, socket: socket, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve(l) }()
	return s, nil
}

// Stop stops serving and removes the socket.
func (s *Server) Stop() {
	s.srv.Stop()
	<-s.done
	_ = os.Remove(s.socket)
}

// Registrar answers the node's plugin registration as node-driver-registrar
// does: a CSIPlugin named after the driver, at its endpoint, version 1.0.0.
type Registrar struct {
	registerapi.UnimplementedRegistrationServer
	// Name and Endpoint are the driver's name and CSI socket.
	Name, Endpoint string

	mu     sync.Mutex
	status []*registerapi.RegistrationStatus
}

// GetInfo answers the plugin's identity.
func (r *Registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.Name, Endpoint: r.Endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

// NotifyRegistrationStatus records what the node said.
func (r *Registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.mu.Lock()
	r.status = append(r.status, s)
	r.mu.Unlock()
	return &registerapi.RegistrationStatusResponse{}, nil
}

// Statuses returns the registration statuses received.
func (r *Registrar) Statuses() []*registerapi.RegistrationStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*registerapi.RegistrationStatus(nil), r.status...)
}

// ServeRegistrar serves r on socket (in the node's plugins_registry).
func ServeRegistrar(r *Registrar, socket string) (*Server, error) {
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, r)
	return serveOn(srv, socket)
}
