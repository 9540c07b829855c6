package config

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Host is what CheckHost needs to know about the machine, as plain values
// and small functions, so the decision stays testable.
type Host struct {
	// PID1 is the name of the init process (/proc/1/comm), e.g. "systemd".
	PID1 string
	// FileExists reports whether a path exists and is a regular file.
	FileExists func(path string) bool
}

// CheckHost returns every reason cfg cannot run on this host: a systemd
// cgroup driver without systemd, and files the configuration names that are
// missing.
func CheckHost(cfg *Config, h Host) field.ErrorList {
	kc := &cfg.Kubelet
	var errs field.ErrorList
	if kc.CgroupDriver == "systemd" && h.PID1 != "systemd" {
		errs = append(errs, field.Invalid(field.NewPath("cgroupDriver"), kc.CgroupDriver,
			fmt.Sprintf("needs systemd as PID 1, but PID 1 is %q; use cgroupfs", h.PID1)))
	}
	for _, f := range []struct {
		p    *field.Path
		file string
	}{
		{field.NewPath("authentication", "x509", "clientCAFile"), kc.Authentication.X509.ClientCAFile},
		{field.NewPath("tlsCertFile"), kc.TLSCertFile},
		{field.NewPath("tlsPrivateKeyFile"), kc.TLSPrivateKeyFile},
	} {
		if f.file != "" && !h.FileExists(f.file) {
			errs = append(errs, field.Invalid(f.p, f.file, "file does not exist"))
		}
	}
	return errs
}
