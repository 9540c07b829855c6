package volumemanager

import (
	"context"
	"encoding/json"
	"errors"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// TokensKey is the volume context (or secrets) key of the service account
// tokens a CSIDriver's tokenRequests ask for, kubelet's.
const TokensKey = "csi.storage.k8s.io/serviceAccount.tokens"

// tokenAttrs are the tokens of the CSIDriver's tokenRequests for pod's
// service account, bound to pod, as kubelet hands them to the driver:
// {TokensKey: JSON of audience → {token, expirationTimestamp}}; nil when
// the driver asks for none.
func (m *Manager) tokenAttrs(ctx context.Context, pod *v1.Pod, cd *storagev1.CSIDriver) (map[string]string, error) {
	if cd == nil || len(cd.Spec.TokenRequests) == 0 {
		return nil, nil
	}
	if m.cfg.Tokens == nil {
		return nil, errors.New("ServiceAccountTokenGetter is nil")
	}
	out := make(map[string]authenticationv1.TokenRequestStatus, len(cd.Spec.TokenRequests))
	for _, r := range cd.Spec.TokenRequests {
		var exp int64
		if r.ExpirationSeconds != nil {
			exp = *r.ExpirationSeconds
		}
		st, err := m.cfg.Tokens.TokenStatus(ctx, pod, r.Audience, exp)
		if err != nil {
			return nil, err
		}
		out[r.Audience] = st
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return map[string]string{TokensKey: string(b)}, nil
}
