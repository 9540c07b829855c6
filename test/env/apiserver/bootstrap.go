package apiserver

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kernelet/kernelet/test/env"
)

// BootstrapTokenGroup is the group of the tokens CreateBootstrapToken
// makes (kubeadm's default node token group).
const BootstrapTokenGroup = "system:bootstrappers:kubeadm:default-node-token"

// CreateBootstrapToken makes a bootstrap token as `kubeadm token create`
// does (a bootstrap.kubernetes.io/token Secret in kube-system, usable for
// authentication, group BootstrapTokenGroup, valid for ttl) and, once,
// the RBAC kubeadm sets up for joining nodes: the token group may create
// CSRs (system:node-bootstrapper) that csrapproving approves
// (nodeclient), and nodes' renewals are approved (selfnodeclient). It
// writes a bootstrap kubeconfig with the token to dir and returns its
// path. Needs Options.BootstrapTokenAuth.
func (s *Server) CreateBootstrapToken(ctx context.Context, dir string, ttl time.Duration) (string, error) {
	cs, err := s.AdminClient()
	if err != nil {
		return "", err
	}
	id, secret := randomToken(6), randomToken(16)
	sec := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system"},
		Type:       v1.SecretType("bootstrap.kubernetes.io/token"),
		StringData: map[string]string{
			"token-id": id, "token-secret": secret,
			"expiration":                     time.Now().Add(ttl).UTC().Format(time.RFC3339),
			"usage-bootstrap-authentication": "true",
			"usage-bootstrap-signing":        "true",
			"auth-extra-groups":              BootstrapTokenGroup,
			"description":                    env.Prefix + " test bootstrap token",
		},
	}
	if _, err := cs.CoreV1().Secrets("kube-system").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("bootstrap token: %w", err)
	}
	for name, b := range map[string]struct{ role, kind, subject string }{
		"kubeadm:kubelet-bootstrap":                     {"system:node-bootstrapper", rbacv1.GroupKind, BootstrapTokenGroup},
		"kubeadm:node-autoapprove-bootstrap":            {"system:certificates.k8s.io:certificatesigningrequests:nodeclient", rbacv1.GroupKind, BootstrapTokenGroup},
		"kubeadm:node-autoapprove-certificate-rotation": {"system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", rbacv1.GroupKind, "system:nodes"},
	} {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: b.kind, Name: b.subject}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("RBAC %s: %w", name, err)
		}
	}
	const name = env.Prefix
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: s.st.URL, CertificateAuthorityData: s.pki.certPEM}
	cfg.AuthInfos["tls-bootstrap-token-user"] = &clientcmdapi.AuthInfo{Token: id + "." + secret}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "tls-bootstrap-token-user"}
	cfg.CurrentContext = name
	path := filepath.Join(dir, "bootstrap-kubelet.conf")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("write bootstrap kubeconfig: %w", err)
	}
	return path, nil
}

// randomToken is n characters of [a-z0-9], a bootstrap token's alphabet.
func randomToken(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
