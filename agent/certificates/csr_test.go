package certificates

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/keyutil"

	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
)

// fakeSigner answers CSRs on a fake API server as the controller-manager
// would: once the requester watches, it approves (or denies) the request
// and, when approved, issues a certificate of ca for the request's key.
func fakeSigner(t *testing.T, ca *testCA, deny bool) *fake.Clientset {
	cs := fake.NewClientset()
	watching := make(chan struct{}, 1)
	// The watch is opened here, then the signer told: it cannot miss the
	// approval.
	cs.PrependWatchReactor("certificatesigningrequests", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := cs.Tracker().Watch(a.GetResource(), "")
		select {
		case watching <- struct{}{}:
		default:
		}
		return true, w, err
	})
	go func() {
		select {
		case <-watching:
		case <-t.Context().Done():
			return
		}
		ctx := context.Background()
		list, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			t.Errorf("CSRs: %v %v", list, err)
			return
		}
		csr := list.Items[0]
		if deny {
			csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "NotMine"}}
		} else {
			block, _ := pem.Decode(csr.Spec.Request)
			req, err := x509.ParseCertificateRequest(block.Bytes)
			if err != nil {
				t.Error(err)
				return
			}
			now := time.Now()
			der, err := x509.CreateCertificate(nil, &x509.Certificate{SerialNumber: big.NewInt(7), Subject: req.Subject,
				NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
				ca.cert, req.PublicKey, ca.key)
			if err != nil {
				t.Error(err)
				return
			}
			csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved"}}
			csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		}
		if err := cs.Tracker().Update(certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), runtime.Object(&csr), ""); err != nil {
			t.Error(err)
		}
	}()
	return cs
}

// TestRequestClientCertificate sends the bootstrap CSR to a fake API
// server: named after the key, kubelet's signer, subject and usages; the
// certificate is returned once issued, a denial is final.
func TestRequestClientCertificate(t *testing.T) {
	ca := newTestCA(t)
	keyPEM, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	for name, deny := range map[string]bool{"issued": false, "denied": true} {
		t.Run(name, func(t *testing.T) {
			cs := fakeSigner(t, ca, deny)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			certPEM, err := requestClientCertificate(ctx, clientsettest.FromClientset(cs).CertificateSigningRequests(), keyPEM, "node-a")
			list, lerr := cs.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
			if lerr != nil || len(list.Items) != 1 {
				t.Fatalf("CSRs %v %v", list, lerr)
			}
			spec := list.Items[0].Spec
			key, _ := keyutil.ParsePrivateKeyPEM(keyPEM)
			wantName, _ := RequestName(key.(crypto.Signer).Public(), NodeSubject("node-a"), ClientUsages(key))
			if list.Items[0].Name != wantName || spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName ||
				len(spec.Usages) != 2 || spec.Usages[0] != certificatesv1.UsageDigitalSignature || spec.Usages[1] != certificatesv1.UsageClientAuth {
				t.Errorf("CSR %s: %+v", list.Items[0].Name, spec)
			}
			if deny {
				if err == nil || !isFinal(err) {
					t.Fatalf("denied: %v, want a final error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			block, _ := pem.Decode(certPEM)
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil || c.Subject.CommonName != "system:node:node-a" || c.Subject.Organization[0] != "system:nodes" {
				t.Errorf("certificate %v %v", c.Subject, err)
			}
		})
	}
}
