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

// Daemon is systemd through go-systemd's daemon package, the environment
// left as it is.
func Daemon() Systemd { return sdDaemon{} }

type sdDaemon struct{}

func (sdDaemon) WatchdogTimeout() (time.Duration, error) { return daemon.SdWatchdogEnabled(false) }
func (sdDaemon) Notify(state string) (bool, error)       { return daemon.SdNotify(false, state) }

// Interval is how often the agent checks its health and notifies
// systemd's watchdog: half the watchdog timeout, 0 without a watchdog.
func Interval(sd Systemd) (time.Duration, error) {
	timeout, err := sd.WatchdogTimeout()
	switch {
	case err != nil:
		return 0, fmt.Errorf("configure watchdog: %w", err)
	case timeout == 0:
		return 0, nil
	case timeout <= minTimeout:
		return 0, fmt.Errorf("configure watchdog timeout too small: %v", timeout)
	}
	return timeout / 2, nil
}

// Ready tells systemd that the agent serves (READY=1).
func Ready(ctx context.Context, sd Systemd) {
	log := klog.FromContext(ctx)
	switch sent, err := sd.Notify(daemon.SdNotifyReady); {
	case err != nil:
		log.Error(err, "Telling systemd the agent is ready")
	case sent:
		log.V(2).Info("Told systemd the agent is ready")
	}
}

// Healthy runs every check as /healthz would, with ctx as the request's:
// the first failure, named.
func Healthy(ctx context.Context, checks []server.HealthCheck) error {
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

// Run checks healthy now and every interval after the previous round
// ended, notifying the watchdog after each that passes, until ctx ends.
func Run(ctx context.Context, sd Systemd, clk clock.Clock, interval time.Duration, healthy func(context.Context) error) {
	klog.FromContext(ctx).Info("Starting systemd watchdog with interval", "interval", interval)
	for {
		round(ctx, sd, clk, healthy)
		select {
		case <-ctx.Done():
			return
		case <-clk.After(interval):
		}
	}
}

// round notifies the watchdog when healthy passes, trying a failed
// notification again.
func round(ctx context.Context, sd Systemd, clk clock.Clock, healthy func(context.Context) error) {
	log := klog.FromContext(ctx)
	if err := healthy(ctx); err != nil {
		log.Error(err, "Do not notify watchdog this iteration as the agent is reportedly not healthy")
		return
	}
	var err error
	for attempt := range attempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return
			case <-clk.After(retryDelay):
			}
		}
		var sent bool
		if sent, err = sd.Notify(daemon.SdNotifyWatchdog); err != nil {
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
