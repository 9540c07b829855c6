package runtimeconn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/runtime"
)

// Runtime is a connected container runtime.
type Runtime interface {
	Info(ctx context.Context) (*runtime.Info, error)
	Ready(ctx context.Context) error
	Close(ctx context.Context) error
}

// Dial connects to the runtime at endpoint once.
type Dial func(ctx context.Context, endpoint string, timeout time.Duration) (Runtime, error)

// Conn is the runtime connection.
type Conn struct {
	dial Dial
	up   chan struct{}
	once sync.Once

	mu  sync.Mutex
	rt  Runtime
	err error
}

// New returns a Conn that dials with dial.
func New(dial Dial) *Conn { return &Conn{dial: dial, up: make(chan struct{})} }

// Connect dials the runtime until it answers or ctx ends.
func (c *Conn) Connect(ctx context.Context, endpoint string, timeout time.Duration) {
	log := klog.FromContext(ctx).WithValues("endpoint", endpoint)
	retry := wait.Backoff{Duration: time.Second, Factor: 2, Cap: 10 * time.Second, Steps: math.MaxInt32}
	attempt := 0
	_ = retry.DelayFunc().Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		err := c.connectOnce(ctx, endpoint, timeout)
		if err == nil {
			return true, nil
		}
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		if attempt%10 == 0 {
			log.Error(err, "Container runtime not reachable; retrying", "attempt", attempt+1)
		}
		attempt++
		return false, nil
	})
}

// connectOnce dials once and, when the runtime answers Info, keeps it.
func (c *Conn) connectOnce(ctx context.Context, endpoint string, timeout time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rt, err := c.dial(cctx, endpoint, timeout)
	if err != nil {
		return err
	}
	info, err := rt.Info(cctx)
	if info == nil {
		_ = rt.Close(ctx)
		if err == nil {
			err = errors.New("the runtime answered no version")
		}
		return err
	}
	klog.FromContext(ctx).Info("Connected to container runtime", "endpoint", endpoint, "runtime", info.RuntimeName,
		"version", info.RuntimeVersion, "conditions", info.Conditions)
	c.mu.Lock()
	c.rt, c.err = rt, nil
	c.mu.Unlock()
	c.once.Do(func() { close(c.up) })
	return nil
}

// Get is the runtime once connected (else nil) and the last dial error.
func (c *Conn) Get() (Runtime, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rt, c.err
}

// Up is closed once the runtime has answered.
func (c *Conn) Up() <-chan struct{} { return c.up }

// Healthy is the `runtime` health check: connected and Ready.
func (c *Conn) Healthy(ctx context.Context) error {
	rt, err := c.Get()
	if rt == nil {
		if err != nil {
			return fmt.Errorf("not connected to the container runtime: %w", err)
		}
		return errors.New("not connected to the container runtime yet")
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return rt.Ready(cctx)
}
