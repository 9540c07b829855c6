// Command csidriver runs the tests' CSI driver (package
// test/csidriver) as a process: the CSI services on --csi-socket and,
// with --registration-dir, the node registration socket
// <dir>/<name>-reg.sock, until SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/kernelet/kernelet/test/csidriver"
)

func main() {
	var cfg csidriver.Config
	flag.StringVar(&cfg.Name, "name", "csi.kernelet.test", "driver name")
	flag.StringVar(&cfg.NodeID, "node-id", "", "node ID (NodeGetInfo)")
	flag.StringVar(&cfg.StateDir, "state-dir", "", "volumes, attachments and the call log")
	flag.Int64Var(&cfg.MaxVolumesPerNode, "max-volumes", 0, "NodeGetInfo's volume limit")
	flag.StringVar(&cfg.TopologyKey, "topology-key", "", "topology key reported with the node ID")
	flag.BoolVar(&cfg.AttachRequired, "attach-required", false, "advertise ControllerPublish/Unpublish")
	socket := flag.String("csi-socket", "", "CSI socket path")
	regDir := flag.String("registration-dir", "", "the node's plugins_registry dir (empty: no registration)")
	regName := flag.String("registration-socket-name", "", "the registration socket's name in that dir (default <name>-reg.sock, node-driver-registrar's)")
	flag.Parse()
	if *regName == "" {
		*regName = cfg.Name + "-reg.sock"
	}
	if err := run(cfg, *socket, filepath.Join(*regDir, *regName), *regDir != ""); err != nil {
		fmt.Fprintln(os.Stderr, "csidriver:", err)
		os.Exit(1)
	}
}

func run(cfg csidriver.Config, socket, regSocket string, register bool) error {
	d, err := csidriver.New(cfg)
	if err != nil {
		return err
	}
	if socket == "" {
		return fmt.Errorf("--csi-socket is required")
	}
	s, err := csidriver.Serve(d, socket)
	if err != nil {
		return err
	}
	defer s.Stop()
	if register {
		r, err := csidriver.ServeRegistrar(&csidriver.Registrar{Name: cfg.Name, Endpoint: socket}, regSocket)
		if err != nil {
			return err
		}
		defer r.Stop()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return nil
}
