package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/kernelet/kernelet/agent/config"
)

// configCommand: `kernelet config validate FILE` loads the file, applies
// defaults, validates it (never the host) and prints the effective config as
// YAML; warnings go to stderr; invalid values exit 1, all listed.
func configCommand(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("config validate", stderr)
	quiet := fs.Bool("quiet", false, "print nothing on success")
	kernelet := fs.String("kernelet-config", "", "a separate KerneletConfiguration file (kernelet.io/v1alpha1), as `kernelet run --kernelet-config`")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kernelet config validate [--quiet] [--kernelet-config KFILE] FILE")
		fs.PrintDefaults()
	}
	if len(args) == 0 || args[0] != "validate" {
		fs.Usage()
		return 2
	}
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	cfg, err := config.LoadWith(fs.Arg(0), config.Options{KerneletFile: *kernelet})
	if cfg != nil {
		for _, w := range cfg.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
	}
	if err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			fmt.Fprintf(stderr, "error: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "error: %s: %v\n", fs.Arg(0), err)
		}
		return 1
	}
	if *quiet {
		return 0
	}
	out, err := yaml.Marshal(cfg.Kubelet)
	if err != nil {
		fmt.Fprintf(stderr, "error: render effective config: %v\n", err)
		return 1
	}
	kout, err := yaml.Marshal(cfg.Kernelet)
	if err != nil {
		fmt.Fprintf(stderr, "error: render effective config: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "# effective configuration of %s (kernelet defaults applied)\n%s", fs.Arg(0), out)
	fmt.Fprintf(stdout, "---\n# kernelet's own settings (%s)\n%s", kerneletSource(cfg), kout)
	return 0
}

// kerneletSource says where the KerneletConfiguration came from.
func kerneletSource(cfg *config.Config) string {
	switch cfg.KerneletFrom {
	case "":
		return "no KerneletConfiguration document: kernelet's defaults"
	case cfg.File:
		return "the second document of " + cfg.File
	}
	return cfg.KerneletFrom
}
