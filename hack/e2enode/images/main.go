package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// Upstream's names (k8s.io/kubernetes v1.37.2 test/utils/image/manifest.go
// and test/e2e/testing-manifests/sample-device-plugin/).
const (
	busyboxImage            = "registry.k8s.io/e2e-test-images/busybox:1.37.0-2"
	sampleDevicePluginImage = "registry.k8s.io/e2e-test-images/sample-device-plugin:1.8.0"
)

func main() {
	out := flag.String("out", "", "OCI image-layout tar to write")
	plugin := flag.String("sample-device-plugin", "", "static sample device plugin binary")
	importSock := flag.String("import", "", "containerd socket to import the tar into (k8s.io namespace)")
	flag.Parse()
	if err := run(context.Background(), *out, *plugin, *importSock); err != nil {
		fmt.Fprintf(os.Stderr, "e2enode images: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, plugin, importSock string) error {
	if out == "" || plugin == "" {
		return fmt.Errorf("--out and --sample-device-plugin are required")
	}
	imgs, err := build(plugin)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := images.WriteOCILayout(&buf, imgs...); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	for _, img := range imgs {
		fmt.Printf("  %-60s manifest %s  %d bytes\n", img.Name, img.ManifestDigest, img.Size())
	}
	if importSock != "" {
		if err := containerd.ImportImages(ctx, importSock, out); err != nil {
			return err
		}
		fmt.Printf("imported into %s\n", importSock)
	}
	return nil
}

func build(plugin string) ([]*images.Image, error) {
	bb, err := images.BusyboxFiles()
	if err != nil {
		return nil, err
	}
	if err := images.CheckStatic(plugin); err != nil {
		return nil, err
	}
	pb, err := os.ReadFile(plugin)
	if err != nil {
		return nil, fmt.Errorf("sample device plugin: %w", err)
	}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	busybox, err := images.Build(images.Spec{
		Name:       busyboxImage,
		Files:      append(images.RootFiles(), bb...),
		Cmd:        []string{"sh"},
		Env:        env,
		WorkingDir: "/",
	})
	if err != nil {
		return nil, err
	}
	dp, err := images.Build(images.Spec{
		Name:       sampleDevicePluginImage,
		Files:      append(images.RootFiles(), images.File{Path: "/sampledeviceplugin", Mode: 0o755, Data: pb}),
		Entrypoint: []string{"/sampledeviceplugin", "-alsologtostderr"},
		Env:        env,
		WorkingDir: "/",
	})
	if err != nil {
		return nil, err
	}
	return []*images.Image{busybox, dp}, nil
}
