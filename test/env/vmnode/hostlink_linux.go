package vmnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// configureLink gives the host end of the link its address and brings it
// up once qemu has created the tap device (during its start-up, before
// the guest runs). The device, its address and its route go away with
// qemu.
func (l *Link) configureLink(ctx context.Context, q *qemuProc) error {
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Stat("/sys/class/net/" + l.Tap); err == nil {
			break
		}
		select {
		case <-q.exited:
			return fmt.Errorf("vmnode: qemu exited before creating tap %s: %v: %s", l.Tap, q.err, q.stderr())
		case <-ctx.Done():
			return fmt.Errorf("vmnode: tap %s: %w", l.Tap, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("vmnode: qemu did not create tap %s in 30 s", l.Tap)
		}
	}
	for _, args := range [][]string{
		{"addr", "add", l.Host.String() + "/30", "dev", l.Tap},
		{"link", "set", "dev", l.Tap, "up"},
	} {
		if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("vmnode: ip %v: %w: %s", args, err, out)
		}
	}
	return nil
}
