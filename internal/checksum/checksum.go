// Package checksum is the checksum kernelet's checkpoints carry: FNV-64a
// of a document's JSON encoding, written with the checksum field at zero.
package checksum

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
)

// ErrMismatch is returned for a checkpoint whose checksum does not match
// its content.
var ErrMismatch = errors.New("checkpoint is corrupt")

// Of is FNV-64a of v's JSON encoding (v with its checksum field zeroed by
// the caller).
func Of(v any) (uint64, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("checksum: %w", err)
	}
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64(), nil
}
