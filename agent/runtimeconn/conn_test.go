package runtimeconn

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/agent/runtime"
)

type fakeRuntime struct {
	info          *runtime.Info
	ready, closed error
	closes        int
}

func (f *fakeRuntime) Info(context.Context) (*runtime.Info, error) { return f.info, nil }
func (f *fakeRuntime) Ready(context.Context) error                 { return f.ready }
func (f *fakeRuntime) Close(context.Context) error                 { f.closes++; return f.closed }

func TestConn(t *testing.T) {
	refused := errors.New("connection refused")
	c := New(func(context.Context, string, time.Duration) (Runtime, error) { return nil, refused })
	if err := c.Healthy(context.Background()); err == nil || err.Error() != "not connected to the container runtime yet" {
		t.Errorf("before any dial: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	c.Connect(ctx, "unix:///nowhere", time.Second)
	cancel()
	if rt, err := c.Get(); rt != nil || !errors.Is(err, refused) {
		t.Errorf("Get after failing dials = %v, %v", rt, err)
	}
	if err := c.Healthy(context.Background()); err == nil || !strings.Contains(err.Error(), "not connected to the container runtime: connection refused") {
		t.Errorf("Healthy after failing dials: %v", err)
	}
	select {
	case <-c.Up():
		t.Fatal("Up closed without a runtime")
	default:
	}

	// A runtime that answers no version is closed and not kept.
	mute := &fakeRuntime{}
	c = New(func(context.Context, string, time.Duration) (Runtime, error) { return mute, nil })
	if err := c.connectOnce(context.Background(), "e", time.Second); err == nil || mute.closes != 1 {
		t.Errorf("no version: %v, closes %d", err, mute.closes)
	}

	notReady := errors.New("runtime network not ready")
	good := &fakeRuntime{info: &runtime.Info{RuntimeName: "containerd"}, ready: notReady}
	c = New(func(context.Context, string, time.Duration) (Runtime, error) { return good, nil })
	c.Connect(context.Background(), "e", time.Second)
	if rt, err := c.Get(); rt != good || err != nil {
		t.Errorf("Get = %v, %v", rt, err)
	}
	<-c.Up()
	if err := c.Healthy(context.Background()); !errors.Is(err, notReady) {
		t.Errorf("Healthy = %v, want the runtime's Ready error", err)
	}
}
