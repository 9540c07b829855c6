package certificates

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kernelet/kernelet/internal/clientset"
)

// errFinal marks a request that asking again does not help: denied,
// failed, or a name taken by another key.
var errFinal = errors.New("final")

func isFinal(err error) bool { return errors.Is(err, errFinal) }

// request is one certificate request.
type request struct {
	// name is the CSR's name; "" lets the API server name it (csr-…).
	name   string
	signer string
	usages []certificatesv1.KeyUsage
	csrPEM []byte
	pub    crypto.PublicKey
}

// newRequest makes the signed request of tmpl for key.
func newRequest(tmpl *x509.CertificateRequest, key crypto.Signer, signer string, usages []certificatesv1.KeyUsage) (request, error) {
	der, err := x509.CreateCertificateRequest(nil, tmpl, key)
	if err != nil {
		return request{}, fmt.Errorf("make CSR: %w", err)
	}
	return request{signer: signer, usages: usages, pub: key.Public(),
		csrPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})}, nil
}

// requestCertificate creates the CSR (or finds the earlier one of the same
// name and key) and waits until it is issued, denied or failed, or ctx is
// done. It returns the issued certificate (PEM).
func requestCertificate(ctx context.Context, client clientset.CSRClient, r request) ([]byte, error) {
	obj := &certificatesv1.CertificateSigningRequest{
		TypeMeta:   metav1.TypeMeta{Kind: "CertificateSigningRequest", APIVersion: "certificates.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: r.name},
		Spec:       certificatesv1.CertificateSigningRequestSpec{Request: r.csrPEM, SignerName: r.signer, Usages: r.usages},
	}
	if r.name == "" {
		obj.GenerateName = "csr-"
	}
	created, err := client.Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) && r.name != "" {
		if created, err = client.Get(ctx, r.name, metav1.GetOptions{}); err == nil {
			err = sameRequest(created, r)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("certificate signing request: %w", err)
	}
	return waitIssued(ctx, client, created)
}

// sameRequest tells whether an existing CSR is r's: the same signer and
// public key (an earlier attempt of this node with the same key).
func sameRequest(csr *certificatesv1.CertificateSigningRequest, r request) error {
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		return fmt.Errorf("CSR %s: no request", csr.Name)
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return fmt.Errorf("CSR %s: %w", csr.Name, err)
	}
	a, errA := x509.MarshalPKIXPublicKey(req.PublicKey)
	b, errB := x509.MarshalPKIXPublicKey(r.pub)
	if errA != nil || errB != nil || !bytes.Equal(a, b) || csr.Spec.SignerName != r.signer {
		return fmt.Errorf("CSR %s exists with another key or signer: %w", csr.Name, errFinal)
	}
	return nil
}

// waitIssued watches csr until it has a certificate (issued), a Denied or
// Failed condition, or ctx ends; a watch that closes is opened again.
func waitIssued(ctx context.Context, client clientset.CSRClient, csr *certificatesv1.CertificateSigningRequest) ([]byte, error) {
	for {
		if cert, done, err := issued(csr); done {
			return cert, err
		}
		w, err := client.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", csr.Name).String(),
			ResourceVersion: csr.ResourceVersion,
		})
		if err == nil {
			csr, err = nextChange(ctx, w, csr)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("CSR %s not issued: %w", csr.Name, ctx.Err())
			}
			// a watch that failed or expired: read the CSR again
			again, err := client.Get(ctx, csr.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("CSR %s: %w", csr.Name, err)
			}
			csr = again
		}
	}
}

// nextChange returns the CSR as the watch reports it changed, or an error
// when the watch ends first.
func nextChange(ctx context.Context, w watch.Interface, last *certificatesv1.CertificateSigningRequest) (*certificatesv1.CertificateSigningRequest, error) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return last, errors.New("watch closed")
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if c, ok := ev.Object.(*certificatesv1.CertificateSigningRequest); ok {
					return c, nil
				}
			case watch.Deleted:
				return last, fmt.Errorf("CSR %s was deleted", last.Name)
			case watch.Error:
				return last, apierrors.FromObject(ev.Object)
			}
		}
	}
}

// issued decides on a CSR: its certificate once approved and issued,
// an error when denied or failed, not done otherwise.
func issued(csr *certificatesv1.CertificateSigningRequest) (cert []byte, done bool, err error) {
	approved := false
	for _, c := range csr.Status.Conditions {
		if c.Status != "" && c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case certificatesv1.CertificateDenied:
			return nil, true, fmt.Errorf("CSR %s was denied (%w): %s %s", csr.Name, errFinal, c.Reason, c.Message)
		case certificatesv1.CertificateFailed:
			return nil, true, fmt.Errorf("CSR %s failed (%w): %s %s", csr.Name, errFinal, c.Reason, c.Message)
		case certificatesv1.CertificateApproved:
			approved = true
		}
	}
	if approved && len(csr.Status.Certificate) > 0 {
		return csr.Status.Certificate, true, nil
	}
	return nil, false, nil
}
