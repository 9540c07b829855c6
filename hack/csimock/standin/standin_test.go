package main

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/kernelet/kernelet/test/csidriver"
)

func TestProxyPairsConnectionsInOrder(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "csi.sock")
	ul, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- proxy(ctx, ul, tl) }()
	defer func() { cancel(); <-done }()

	// e2e's side connects first (as its port forwarding does), twice.
	remote1 := dial(t, "tcp", tl.Addr().String())
	remote2 := dial(t, "tcp", tl.Addr().String())
	local1 := dial(t, "unix", socket)
	exchange(t, local1, remote1, "one")
	local2 := dial(t, "unix", socket)
	exchange(t, local2, remote2, "two")
	exchange(t, remote2, local2, "back")

	// Closing the local side closes the remote one.
	local1.Close()
	if _, err := io.ReadAll(remote1); err != nil {
		t.Fatalf("remote1 after the local side closed: %v", err)
	}
}

func dial(t *testing.T, network, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func exchange(t *testing.T, from, to net.Conn, msg string) {
	t.Helper()
	if _, err := from.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(to, buf); err != nil || string(buf) != msg {
		t.Fatalf("read %q, %v; want %q", buf, err, msg)
	}
}

func TestHostpathRefusesDriverMode(t *testing.T) {
	err := runHostpath(context.Background(), []string{"--drivername=x", "-nodeid=n", "--enable-attach", "--attach-limit", "2"})
	if err == nil || !strings.Contains(err.Error(), "-proxy-endpoint") {
		t.Fatalf("driver mode: %v, want a refusal naming -proxy-endpoint", err)
	}
}

func TestRegistrarRegistersAndExitsOnFailure(t *testing.T) {
	dir := t.TempDir()
	d, err := csidriver.New(csidriver.Config{Name: "csi-mock-x", NodeID: "node-1", StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := csidriver.Serve(d, filepath.Join(dir, "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runRegistrar(ctx, []string{"--csi-address=" + filepath.Join(dir, "csi.sock"),
			"--kubelet-registration-path=/var/lib/kubelet/plugins/csi-mock/csi.sock", "--plugin-registration-path=" + dir})
	}()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "csi-mock-x-reg.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reg := registerapi.NewRegistrationClient(conn)
	info, err := reg.GetInfo(ctx, &registerapi.InfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != registerapi.CSIPlugin || info.Name != "csi-mock-x" || info.Endpoint != "/var/lib/kubelet/plugins/csi-mock/csi.sock" {
		t.Fatalf("GetInfo = %+v", info)
	}
	if _, err := reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: false, Error: "refused"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("registrar after a failed registration: %v", err)
	}
}
