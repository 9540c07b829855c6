package watchdog

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kernelet/kernelet/agent/server"
)

const (
	// minTimeout is the shortest watchdog timeout accepted (kubelet's).
	minTimeout = time.Second
	// attempts and retryDelay: a failed notification is tried again
	// once, 1 s later (kubelet's back-off of two steps).
	attempts   = 2
	retryDelay = time.Second
)

// Systemd is the part of systemd's notification protocol the agent uses.
type Systemd interface {
	// WatchdogTimeout is the watchdog timeout systemd gave this process;
	// 0 for none.
	WatchdogTimeout() (time.Duration, error)
	// Notify sends state to systemd; false when there is no notification
	// socket (NOTIFY_SOCKET unset).
	Notify(state string) (bool, error)
}

// sdDaemon is systemd through go-systemd's daemon package, the
// environment left as it is.
type sdDaemon struct{}

func (sdDaemon) WatchdogTimeout() (time.Duration, error) { return daemon.SdWatchdogEnabled(false) }
func (sdDaemon) Notify(state string) (bool, error)       { return daemon.SdNotify(false, state) }

// Watchdog is systemd's watchdog as the agent feeds it.
type Watchdog struct {
	sd    Systemd
	clock clock.Clock
	// interval is how often the health checks run: half the watchdog
	// timeout, 0 without a watchdog.
	interval time.Duration
}

// New reads the watchdog systemd gave this process (go-systemd's daemon
// package). A timeout that cannot be read or of 1 s or less is an error
// (kubelet's messages).
func New() (*Watchdog, error) { return newWatchdog(sdDaemon{}, clock.RealClock{}) }

func newWatchdog(sd Systemd, clk clock.Clock) (*Watchdog, error) {
	timeout, err := sd.WatchdogTimeout()
	switch {
	case err != nil:
		return nil, fmt.Errorf("configure watchdog: %w", err)
	case timeout > 0 && timeout <= minTimeout:
		return nil, fmt.Errorf("configure watchdog timeout too small: %v", timeout)
	}
	return &Watchdog{sd: sd, clock: clk, interval: timeout / 2}, nil
}

// Interval is how often Run checks and notifies; 0 without a watchdog.
func (w *Watchdog) Interval() time.Duration { return w.interval }

// Ready tells systemd that the agent serves (READY=1).
func (w *Watchdog) Ready(ctx context.Context) {
	log := klog.FromContext(ctx)
	switch sent, err := w.sd.Notify(daemon.SdNotifyReady); {
	case err != nil:
		log.Error(err, "Telling systemd the agent is ready")
	case sent:
		log.V(2).Info("Told systemd the agent is ready")
	}
}

// healthy runs every check as /healthz would, with ctx as the request's:
// the first failure, named.
func healthy(ctx context.Context, checks []server.HealthCheck) error {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, "/healthz", nil)
	if err != nil {
		return err
	}
	for _, c := range checks {
		if err := c.Check(r); err != nil {
			return fmt.Errorf("checker %s failed: %w", c.Name, err)
		}
	}
	return nil
}

// Run runs the checks now and every interval after the previous round
// ended, notifying the watchdog after each round they all pass, until
// ctx ends; without a watchdog it returns at once.
func (w *Watchdog) Run(ctx context.Context, checks []server.HealthCheck) {
	if w.interval == 0 {
		return
	}
	klog.FromContext(ctx).Info("Starting systemd watchdog with interval", "interval", w.interval)
	for {
		w.round(ctx, checks)
		select {
		case <-ctx.Done():
			return
		case <-w.clock.After(w.interval):
		}
	}
}

// round notifies the watchdog when healthy passes, trying a failed
// notification again.
func (w *Watchdog) round(ctx context.Context, checks []server.HealthCheck) {
	log := klog.FromContext(ctx)
	if err := healthy(ctx, checks); err != nil {
		log.Error(err, "Do not notify watchdog this iteration as the agent is reportedly not healthy")
		return
	}
	var err error
	for attempt := range attempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return
			case <-w.clock.After(retryDelay):
			}
		}
		var sent bool
		if sent, err = w.sd.Notify(daemon.SdNotifyWatchdog); err != nil {
			log.V(5).Info("Failed to notify systemd watchdog, retrying", "err", err)
			continue
		}
		if !sent {
			log.Error(errors.New("notification not supported (NOTIFY_SOCKET is unset)"), "Failed to notify watchdog")
			return
		}
		log.V(5).Info("Watchdog notified")
		return
	}
	log.Error(err, "Failed to notify watchdog", "attempts", attempts)
}
