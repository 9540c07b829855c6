package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

func main() {
	out := flag.String("out", "_output/images", "directory for images.tar and registry.tar")
	testbox := flag.String("testbox", "", "prebuilt static testbox binary (default: build test/testbox into bin/testbox)")
	importSock := flag.String("import", "", "containerd socket to import images.tar into (k8s.io namespace)")
	flag.Parse()
	if err := run(context.Background(), *out, *testbox, *importSock); err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, testbox, importSock string) error {
	imgs, err := images.BuildSet(testbox)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		name   string
		images []*images.Image
	}{
		{"images.tar", imgs.Imported()},
		{"registry.tar", imgs.All()},
	} {
		var buf bytes.Buffer
		if err := images.WriteOCILayout(&buf, f.images...); err != nil {
			return err
		}
		path := filepath.Join(out, f.name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Printf("%s (%d bytes)\n", path, buf.Len())
	}
	for _, img := range imgs.All() {
		fmt.Printf("  %-45s manifest %s  %d bytes\n", img.Name, img.ManifestDigest, img.Size())
	}
	if importSock != "" {
		if err := containerd.ImportImages(ctx, importSock, filepath.Join(out, "images.tar")); err != nil {
			return err
		}
		fmt.Printf("imported into %s\n", importSock)
	}
	return nil
}
