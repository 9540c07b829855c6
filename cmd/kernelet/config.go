package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/kernelet/kernelet/agent/config"
)

// configCommand: `kernelet config validate FILE` loads the file, applies
// defaults, validates it (never the host) and prints the effective config as
// YAML; warnings go to stderr; invalid values exit 1, all listed.
func configCommand(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("config validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quiet := fs.Bool("quiet", false, "print nothing on success")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kernelet config validate [--quiet] FILE")
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
	cfg, err := config.Load(fs.Arg(0))
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
	fmt.Fprintf(stdout, "# effective configuration of %s (kernelet defaults applied)\n%s", fs.Arg(0), out)
	return 0
}
