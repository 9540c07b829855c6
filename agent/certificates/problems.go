package certificates

import (
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/agent/config"
)

// Problems are what is wrong with the bootstrap flags and the
// certificate fields of kc together, each naming the flag or field:
// --bootstrap-kubeconfig without --kubeconfig (the file it writes) or
// that does not load when the bootstrap is needed (--kubeconfig not
// usable: KubeconfigUsable), a relative --cert-dir, and rotateCertificates or
// serverTLSBootstrap on a node without an API server, serverTLSBootstrap
// with the RotateKubeletServerCertificate gate off (kubelet would serve
// the self-signed certificate without a word).
func Problems(o Options, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	var errs field.ErrorList
	if o.BootstrapKubeconfig != "" {
		if o.Kubeconfig == "" {
			errs = append(errs, field.Required(field.NewPath("--kubeconfig"), "--bootstrap-kubeconfig writes the kubeconfig named by --kubeconfig"))
		}
		now := time.Now
		if o.Now != nil {
			now = o.Now
		}
		// Read only when the bootstrap will run: kubeadm removes the file
		// after the join and its drop-in still names it.
		if o.Kubeconfig != "" && KubeconfigUsable(o.Kubeconfig, now()) != nil {
			if _, err := LoadKubeconfig(o.BootstrapKubeconfig); err != nil {
				errs = append(errs, field.Invalid(field.NewPath("--bootstrap-kubeconfig"), o.BootstrapKubeconfig, err.Error()))
			}
		}
	}
	if o.CertDir != "" && !filepath.IsAbs(o.CertDir) {
		errs = append(errs, field.Invalid(field.NewPath("--cert-dir"), o.CertDir, "must be an absolute path"))
	}
	if o.Kubeconfig == "" {
		if kc.RotateCertificates {
			errs = append(errs, field.Invalid(field.NewPath("rotateCertificates"), true, "needs --kubeconfig: a standalone node has no client certificate"))
		}
		if kc.ServerTLSBootstrap {
			errs = append(errs, field.Invalid(field.NewPath("serverTLSBootstrap"), true, "needs --kubeconfig: a standalone node cannot request a serving certificate"))
		}
	}
	if kc.ServerTLSBootstrap && !config.FeatureEnabled(kc, "RotateKubeletServerCertificate") {
		errs = append(errs, field.Invalid(field.NewPath("serverTLSBootstrap"), true, "needs the RotateKubeletServerCertificate feature gate, which is off"))
	}
	return errs
}
