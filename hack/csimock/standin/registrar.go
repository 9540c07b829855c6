package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/kernelet/kernelet/test/csidriver"
)

// registrarFlags are node-driver-registrar's flags that the stand-in acts on.
type registrarFlags struct {
	csiAddress, kubeletPath, registrationDir, httpEndpoint string
	timeout                                                time.Duration
}

// runRegistrar registers the CSI driver at --csi-address with the node agent.
func runRegistrar(ctx context.Context, args []string) error {
	var f registrarFlags
	fs := flag.NewFlagSet("registrar", flag.ContinueOnError)
	fs.StringVar(&f.csiAddress, "csi-address", "/run/csi/socket", "the CSI driver's socket")
	fs.StringVar(&f.kubeletPath, "kubelet-registration-path", "", "the driver's socket as the node agent sees it")
	fs.StringVar(&f.registrationDir, "plugin-registration-path", "/registration", "the node's plugins_registry")
	fs.StringVar(&f.httpEndpoint, "http-endpoint", "", "address of /healthz (empty: none)")
	fs.DurationVar(&f.timeout, "timeout", time.Second, "timeout of each CSI call")
	fs.Int("v", 0, "log verbosity (unused)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.kubeletPath == "" {
		return errors.New("--kubelet-registration-path is required")
	}
	name, err := driverName(ctx, strings.TrimPrefix(f.csiAddress, "unix://"), f.timeout)
	if err != nil {
		return err
	}
	socket := filepath.Join(f.registrationDir, name+"-reg.sock")
	failed := make(chan string, 1)
	reg := &registrar{Registrar: csidriver.Registrar{Name: name, Endpoint: f.kubeletPath}, failed: failed}
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		return fmt.Errorf("listen %s: %w", socket, err)
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, reg)
	go func() { _ = srv.Serve(l) }()
	defer func() { srv.GracefulStop(); _ = os.Remove(socket) }()
	log.Printf("registering driver %s (endpoint %s) on %s", name, f.kubeletPath, socket)
	if f.httpEndpoint != "" {
		go serveHealthz(ctx, f.httpEndpoint, socket)
	}
	select {
	case <-ctx.Done():
		return nil
	case why := <-failed:
		return fmt.Errorf("the node agent did not register driver %s: %s", name, why)
	}
}

// driverName asks the driver its name, retrying until it answers or ctx ends.
func driverName(ctx context.Context, socket string, timeout time.Duration) (string, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "", fmt.Errorf("CSI client for %s: %w", socket, err)
	}
	defer conn.Close()
	id := csi.NewIdentityClient(conn)
	for {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		info, err := id.GetPluginInfo(cctx, &csi.GetPluginInfoRequest{})
		cancel()
		if err == nil && info.GetName() != "" {
			return info.GetName(), nil
		}
		log.Printf("GetPluginInfo on %s: %v (retrying)", socket, err)
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// registrar ends the stand-in when the node agent reports a failed
// registration, as node-driver-registrar exits then.
type registrar struct {
	csidriver.Registrar
	failed chan<- string
}

// NotifyRegistrationStatus records the status and reports a failure.
func (r *registrar) NotifyRegistrationStatus(ctx context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !s.PluginRegistered {
		select {
		case r.failed <- s.Error:
		default:
		}
	}
	return r.Registrar.NotifyRegistrationStatus(ctx, s)
}

// serveHealthz answers /healthz with 200 while the registration socket exists.
func serveHealthz(ctx context.Context, addr, socket string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if _, err := os.Stat(socket); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Printf("healthz on %s: %v", addr, err)
	}
}
