package certificates

import (
	"crypto/rsa"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// KubeconfigUsable tells why the kubeconfig at path cannot be used at now
// (nil: it can): it is missing or does not load, its client certificate
// and key do not load, or a certificate of the chain is not valid at now.
// A kubeconfig without a client certificate (a token) is usable.
func KubeconfigUsable(path string, now time.Time) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	cfg, err := LoadKubeconfig(path)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := clientPair(cfg)
	if err != nil {
		return err
	}
	if certPEM == nil {
		return nil
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return fmt.Errorf("client certificate: %w", err)
	}
	return CertsValidAt(certPEM, now)
}

// CertsValidAt tells whether every certificate in certPEM is valid at now.
func CertsValidAt(certPEM []byte, now time.Time) error {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return fmt.Errorf("client certificate: %w", err)
	}
	for _, c := range certs {
		if now.After(c.NotAfter) {
			return fmt.Errorf("client certificate %q expired at %s", c.Subject.CommonName, c.NotAfter.UTC().Format(time.RFC3339))
		}
		if now.Before(c.NotBefore) {
			return fmt.Errorf("client certificate %q is not valid before %s", c.Subject.CommonName, c.NotBefore.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// clientPair is the client certificate and key of cfg, from its data or
// its files; nil, nil without a client certificate.
func clientPair(cfg *rest.Config) (certPEM, keyPEM []byte, err error) {
	certPEM, keyPEM = cfg.CertData, cfg.KeyData
	if len(certPEM) == 0 && cfg.CertFile != "" {
		if certPEM, err = os.ReadFile(cfg.CertFile); err != nil {
			return nil, nil, fmt.Errorf("client certificate: %w", err)
		}
	}
	if len(keyPEM) == 0 && cfg.KeyFile != "" {
		if keyPEM, err = os.ReadFile(cfg.KeyFile); err != nil {
			return nil, nil, fmt.Errorf("client key: %w", err)
		}
	}
	if len(certPEM) == 0 {
		if len(keyPEM) > 0 {
			return nil, nil, errors.New("client key without a client certificate")
		}
		return nil, nil, nil
	}
	return certPEM, keyPEM, nil
}

// BootstrappedKubeconfig is the kubeconfig written after the bootstrap:
// the bootstrap kubeconfig's server and CA (file or data) with the client
// certificate and key of pemPath (kubelet's layout and names).
func BootstrappedKubeconfig(boot *rest.Config, pemPath string) ([]byte, error) {
	cluster := &clientcmdapi.Cluster{
		Server:                boot.Host,
		InsecureSkipTLSVerify: boot.Insecure,
		CertificateAuthority:  boot.CAFile,
		TLSServerName:         boot.ServerName,
	}
	if boot.CAFile == "" {
		cluster.CertificateAuthorityData = boot.CAData
	}
	cfg := clientcmdapi.Config{
		Clusters:  map[string]*clientcmdapi.Cluster{"default-cluster": cluster},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: pemPath, ClientKey: pemPath}},
		Contexts: map[string]*clientcmdapi.Context{"default-context": {
			Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default",
		}},
		CurrentContext: "default-context",
	}
	out, err := clientcmd.Write(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode kubeconfig: %w", err)
	}
	return out, nil
}

func isRSA(key any) bool {
	_, ok := key.(*rsa.PrivateKey)
	return ok
}
