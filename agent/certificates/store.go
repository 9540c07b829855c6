package certificates

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2/maybe"
)

// storeDateFormat dates the stored files (kubelet's
// kubelet-client-2006-01-02-15-04-05.pem).
const storeDateFormat = "2006-01-02-15-04-05"

// errNoCert: the store holds no certificate yet.
var errNoCert = errors.New("no certificate stored")

// fileStore keeps a certificate and its key in one PEM file per issue,
// <prefix>-<date>.pem in dir, with the symlink <prefix>-current.pem to the
// one in use, as kubelet's cert dir. certFile and keyFile, when set, are
// read while the symlink does not exist (tlsCertFile/tlsPrivateKeyFile,
// a kubeconfig's files).
type fileStore struct {
	dir, prefix       string
	certFile, keyFile string
	now               func() time.Time
}

// CurrentPath is the symlink to the certificate in use.
func (s fileStore) CurrentPath() string { return CurrentPath(s.dir, s.prefix) }

// Current loads the certificate in use; errNoCert when there is none.
func (s fileStore) Current() (*tls.Certificate, error) {
	cur := s.CurrentPath()
	if _, err := os.Stat(cur); err == nil {
		return loadPair(cur, cur)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("certificate %s: %w", cur, err)
	}
	if s.certFile != "" && s.keyFile != "" {
		if _, err := os.Stat(s.certFile); err == nil {
			return loadPair(s.certFile, s.keyFile)
		}
	}
	return nil, errNoCert
}

// Update stores certPEM and keyPEM as a new dated file, points the
// symlink at it (a rename: never a moment without one) and returns the
// pair.
func (s fileStore) Update(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("issued certificate: %w", err)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("cert dir: %w", err)
	}
	name := fmt.Sprintf("%s-%s.pem", s.prefix, s.now().UTC().Format(storeDateFormat))
	data := append(append(append([]byte{}, certPEM...), '\n'), keyPEM...)
	if err := maybe.WriteFile(filepath.Join(s.dir, name), data, 0o600); err != nil {
		return nil, fmt.Errorf("store certificate: %w", err)
	}
	tmp := s.CurrentPath() + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Join(s.dir, name), tmp); err != nil {
		return nil, fmt.Errorf("store certificate: %w", err)
	}
	if err := os.Rename(tmp, s.CurrentPath()); err != nil {
		return nil, fmt.Errorf("store certificate: %w", err)
	}
	return &pair, nil
}

func loadPair(certFile, keyFile string) (*tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", certFile, err)
	}
	return &pair, nil
}
