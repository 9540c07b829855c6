//go:build !linux

package volumemanager

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

var errLocalLinuxOnly = errors.New("local persistent volumes need Linux")

func (m *Manager) setUpLocal(context.Context, *v1.Pod, volumeSpec) (string, error) {
	return "", errLocalLinuxOnly
}

func (m *Manager) tearDownLocal(context.Context, types.UID, *publishedVol) error { return nil }
