package certificates

import (
	"context"
	"crypto"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2/maybe"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/internal/clientset"
)

// Bootstrap makes o.Kubeconfig usable: when it is missing, does not load,
// or its client certificate has expired (KubeconfigUsable), and
// o.BootstrapKubeconfig is set, it writes a kubeconfig pointing at the
// client certificate of the cert dir, requesting that certificate with
// the bootstrap credentials first unless the cert dir holds a valid one.
// It returns once the certificate is issued, ctx is done or
// BootstrapTimeout passed.
func Bootstrap(ctx context.Context, o Options) error {
	if o.BootstrapKubeconfig == "" {
		return nil
	}
	log := klog.FromContext(ctx).WithName("certificates")
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	why := KubeconfigUsable(o.Kubeconfig, now())
	if why == nil {
		log.V(2).Info("Kubeconfig exists and is valid, skipping bootstrap", "path", o.Kubeconfig)
		return nil
	}
	log.Info("Bootstrapping the client certificate", "kubeconfig", o.Kubeconfig, "reason", why.Error(), "bootstrapKubeconfig", o.BootstrapKubeconfig)
	boot, err := LoadKubeconfig(o.BootstrapKubeconfig)
	if err != nil {
		return fmt.Errorf("bootstrap kubeconfig: %w", err)
	}
	store := fileStore{dir: o.CertDir, prefix: ClientPrefix, now: now}
	pemPath := store.CurrentPath()
	cur, err := store.Current()
	if err == nil && CertsValidAt(pemOf(cur), now()) == nil {
		log.Info("Client certificate in the cert dir is valid, writing the kubeconfig", "path", pemPath, "notAfter", cur.Leaf.NotAfter)
		return writeBootstrapped(o.Kubeconfig, boot, pemPath)
	}
	keyPEM, err := bootstrapKey(filepath.Join(o.CertDir, tmpKeyFile))
	if err != nil {
		return err
	}
	cs, err := clientset.NewForConfig(boot)
	if err != nil {
		return fmt.Errorf("bootstrap client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, BootstrapTimeout)
	defer cancel()
	certPEM, err := requestClientCertificate(ctx, cs.CertificateSigningRequests(), keyPEM, o.NodeName)
	if err != nil {
		return fmt.Errorf("bootstrap client certificate: %w", err)
	}
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		return fmt.Errorf("store client certificate: %w", err)
	}
	if err := os.Remove(filepath.Join(o.CertDir, tmpKeyFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Info("Could not remove the bootstrap key", "err", err)
	}
	log.Info("Client certificate issued", "path", pemPath)
	return writeBootstrapped(o.Kubeconfig, boot, pemPath)
}

// pemOf is the PEM of a pair's certificate chain.
func pemOf(c *tls.Certificate) []byte {
	var out []byte
	for _, der := range c.Certificate {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	return out
}

// bootstrapKey is the private key of the request: the one saved at
// tmpPath by an earlier attempt (whose CSR may be pending), else a new one
// saved there. An expired certificate's key is not used again: its
// earlier CSR, if still there, holds the expired certificate.
func bootstrapKey(tmpPath string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(tmpPath), 0o700); err != nil {
		return nil, fmt.Errorf("cert dir: %w", err)
	}
	keyPEM, _, err := keyutil.LoadOrGenerateKeyFile(tmpPath)
	if err != nil {
		return nil, fmt.Errorf("bootstrap key: %w", err)
	}
	return keyPEM, nil
}

// requestClientCertificate sends the node's client CSR, named after its
// key (RequestName), and waits for the certificate; a request that does
// not reach the API server is sent again every few seconds until ctx is
// done (an authorization or validation error is final).
func requestClientCertificate(ctx context.Context, client clientset.CSRClient, keyPEM []byte, nodeName string) ([]byte, error) {
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	signer, err := signerOf(key)
	if err != nil {
		return nil, err
	}
	subject := NodeSubject(nodeName)
	req, err := newRequest(&x509.CertificateRequest{Subject: subject}, signer,
		certificatesv1.KubeAPIServerClientKubeletSignerName, ClientUsages(key))
	if err != nil {
		return nil, err
	}
	if req.name, err = RequestName(signer.Public(), subject, req.usages); err != nil {
		return nil, err
	}
	log := klog.FromContext(ctx)
	log.Info("Requesting the client certificate", "csr", req.name)
	var certPEM []byte
	err = wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := requestCertificate(ctx, client, req)
		switch {
		case err == nil:
			if err := CertsValidAt(c, time.Now()); err != nil {
				return false, fmt.Errorf("CSR %s: %w", req.name, err)
			}
			certPEM = c
			return true, nil
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsInvalid(err) || ctx.Err() != nil:
			return false, err
		case isFinal(err):
			return false, err
		}
		log.Info("Certificate signing request not sent, retrying", "err", err)
		return false, nil
	})
	return certPEM, err
}

// NodeSubject is the subject of the node's certificates.
func NodeSubject(nodeName string) pkix.Name {
	return pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}}
}

// ClientUsages are the client certificate's key usages: digital signature
// and client auth, plus key encipherment for an RSA key (kubelet's).
func ClientUsages(key any) []certificatesv1.KeyUsage {
	return withRSA(key, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)
}

// ServingUsages are the serving certificate's: digital signature and
// server auth, plus key encipherment for an RSA key.
func ServingUsages(key any) []certificatesv1.KeyUsage {
	return withRSA(key, certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth)
}

func withRSA(key any, usages ...certificatesv1.KeyUsage) []certificatesv1.KeyUsage {
	if isRSA(key) {
		usages = append(usages, certificatesv1.UsageKeyEncipherment)
	}
	return usages
}

// RequestName names the bootstrap CSR after a digest of the public key,
// subject and usages, so that a retry with the same key finds its earlier
// request (kubelet's node-csr-<digest>).
func RequestName(pub crypto.PublicKey, subject pkix.Name, usages []certificatesv1.KeyUsage) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("public key: %w", err)
	}
	h := sha512.New512_256()
	enc := base64.RawURLEncoding
	add := func(b []byte) {
		h.Write([]byte(enc.EncodeToString(b)))
		h.Write([]byte{'|'})
	}
	add(der)
	add([]byte(subject.CommonName))
	for _, o := range subject.Organization {
		add([]byte(o))
	}
	for _, u := range usages {
		add([]byte(u))
	}
	return "node-csr-" + enc.EncodeToString(h.Sum(nil)), nil
}

// LoadKubeconfig reads a kubeconfig file into a client configuration.
func LoadKubeconfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// WriteKubeconfig writes cfg to path atomically, readable by its owner
// only (it names the node's key).
func WriteKubeconfig(path string, cfg []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	if err := maybe.WriteFile(path, cfg, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

func writeBootstrapped(path string, boot *rest.Config, pemPath string) error {
	data, err := BootstrappedKubeconfig(boot, pemPath)
	if err != nil {
		return err
	}
	return WriteKubeconfig(path, data)
}
