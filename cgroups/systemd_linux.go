package cgroups

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
)

// systemdJobTimeout bounds how long a start or stop job of a slice may
// take when the caller's context has no deadline.
const systemdJobTimeout = 30 * time.Second

// systemdUnits creates, updates and stops the slices of the systemd
// driver over systemd's D-Bus API (the system bus, or systemd's private
// socket as root when there is no bus), through go-systemd's dbus
// package. A closed connection (systemd or dbus restarted) is dialled
// again once per call.
type systemdUnits struct {
	mu   sync.Mutex
	conn *sddbus.Conn
	dial func(ctx context.Context) (*sddbus.Conn, error)
}

func newSystemdUnits(ctx context.Context) (*systemdUnits, error) {
	u := &systemdUnits{dial: sddbus.NewWithContext}
	if _, err := u.connection(ctx); err != nil {
		return nil, err
	}
	return u, nil
}

// connection returns the open connection, dialling a new one when there
// is none or it was closed.
func (u *systemdUnits) connection(ctx context.Context) (*sddbus.Conn, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.conn != nil && u.conn.Connected() {
		return u.conn, nil
	}
	if u.conn != nil {
		u.conn.Close()
		u.conn = nil
	}
	c, err := u.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("systemd driver: connect to systemd over D-Bus: %w", err)
	}
	u.conn = c
	return c, nil
}

// call runs f on the connection, once more on a fresh one when the
// connection turned out closed.
func (u *systemdUnits) call(ctx context.Context, f func(*sddbus.Conn) error) error {
	c, err := u.connection(ctx)
	if err != nil {
		return err
	}
	err = f(c)
	if err == nil || !(errors.Is(err, dbus.ErrClosed) || !c.Connected()) {
		return err
	}
	if c, err = u.connection(ctx); err != nil {
		return err
	}
	return f(c)
}

// Close closes the D-Bus connection.
func (u *systemdUnits) Close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.conn != nil {
		u.conn.Close()
		u.conn = nil
	}
}

func dbusProps(props []UnitProperty) []sddbus.Property {
	out := make([]sddbus.Property, len(props))
	for i, p := range props {
		out[i] = sddbus.Property{Name: p.Name, Value: dbus.MakeVariant(p.Value)}
	}
	return out
}

// ensure makes the transient slice unit active with props: an active
// unit gets them through SetUnitProperties (runtime only, as kubelet's);
// otherwise the unit is started as a transient slice that wants its
// parent (libcontainer's properties: a description, no default
// dependencies) and the call waits for the start job.
func (u *systemdUnits) ensure(ctx context.Context, unit, parent string, props []UnitProperty) error {
	return u.call(ctx, func(c *sddbus.Conn) error {
		state, err := c.GetUnitPropertyContext(ctx, unit, "ActiveState")
		if err != nil {
			return fmt.Errorf("systemd unit %s: active state: %w", unit, err)
		}
		switch s, _ := state.Value.Value().(string); s {
		case "active", "reloading":
			if err := c.SetUnitPropertiesContext(ctx, unit, true, dbusProps(props)...); err != nil {
				return fmt.Errorf("systemd unit %s: set properties: %w", unit, err)
			}
			return nil
		case "failed":
			_ = c.ResetFailedUnitContext(ctx, unit)
		}
		all := append([]UnitProperty{
			{"Description", "kernelet: pod cgroup " + unit},
			{"Wants", []string{parent}},
			{"DefaultDependencies", false},
		}, props...)
		return u.job(ctx, unit, "start", func(ch chan<- string) (int, error) {
			return c.StartTransientUnitContext(ctx, unit, "replace", dbusProps(all), ch)
		})
	})
}

// stop stops the slice unit and waits for the job; a unit systemd does
// not know is already stopped. Stopping a slice stops its child units:
// the caller checks first that no process is left in it.
func (u *systemdUnits) stop(ctx context.Context, unit string) error {
	return u.call(ctx, func(c *sddbus.Conn) error {
		err := u.job(ctx, unit, "stop", func(ch chan<- string) (int, error) {
			return c.StopUnitContext(ctx, unit, "replace", ch)
		})
		var derr dbus.Error
		if errors.As(err, &derr) && derr.Name == "org.freedesktop.systemd1.NoSuchUnit" {
			return nil
		}
		return err
	})
}

// job starts a job and waits for its result, which must be "done".
func (u *systemdUnits) job(ctx context.Context, unit, what string, start func(ch chan<- string) (int, error)) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, systemdJobTimeout)
		defer cancel()
	}
	ch := make(chan string, 1)
	if _, err := start(ch); err != nil {
		return fmt.Errorf("systemd unit %s: %s: %w", unit, what, err)
	}
	select {
	case res := <-ch:
		if res != "done" {
			return fmt.Errorf("systemd unit %s: %s job %s", unit, what, res)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("systemd unit %s: waiting for the %s job: %w", unit, what, ctx.Err())
	}
}
