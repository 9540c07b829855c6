package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// The controller's fixed timings, kubelet's.
const (
	// statusUpdateRetries is how many times one status update is tried
	// before waiting for the next period.
	statusUpdateRetries = 5
	// registerBackoffMin and registerBackoffMax bound the wait between
	// registration attempts (doubling).
	registerBackoffMin = 100 * time.Millisecond
	registerBackoffMax = 7 * time.Second
	// fastStatusInterval is how often, after start and until the Node is
	// first reported Ready (for at most fastStatusFor), the inputs are
	// checked for readiness, so that Ready is written as soon as it is
	// true rather than at the next period.
	fastStatusInterval = 100 * time.Millisecond
	fastStatusFor      = 2 * time.Minute
	// runtimeCheckWait bounds the wait, before the first status after
	// start, for the inputs to carry a runtime check (kubelet checks the
	// runtime once before its first status update).
	runtimeCheckWait = 2 * time.Second
)

// DefaultStartingMessage is the message of the Starting event (kubelet's
// says "Starting kubelet.").
const DefaultStartingMessage = "Starting kernelet."

// errNodeGone: the Node was deleted after registration.
var errNodeGone = errors.New("node no longer exists")

// Controller registers the Node, keeps its status current and renews its
// Lease. Create it with New, run it with Run.
type Controller struct {
	cfg   Config
	clock clock.WithTicker

	logger logr.Logger // set by Run

	started time.Time // set by Run

	mu sync.Mutex
	// readyComputed: a status this agent computed said Ready. The Node's
	// own Ready condition does not count: after a restart it is the
	// previous agent's.
	readyComputed bool
	// runtimeAwaited: the wait for the first runtime check is over.
	runtimeAwaited bool
	status         Status
	node           *v1.Node // last known (written or read)
	nodeUID        types.UID
	statusOut      outage
	registerOut    outage
	leaseOutage    outage
}

// outage tracks one loop's failures so that an outage is logged once.
type outage struct{ since time.Time }

// New checks cfg and applies its defaults (Hostname = NodeName,
// HeartbeatClient = Client, the real clock, DefaultStartingMessage).
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.NodeName == "":
		return nil, errors.New("node status: no node name")
	case cfg.Kubelet == nil:
		return nil, errors.New("node status: no kubelet configuration")
	case cfg.Client == nil && cfg.HeartbeatClient == nil:
		return nil, errors.New("node status: no API client")
	case cfg.Inputs == nil:
		return nil, errors.New("node status: no inputs function")
	case cfg.Kubelet.NodeStatusUpdateFrequency.Duration <= 0 || cfg.Kubelet.NodeLeaseDurationSeconds <= 0:
		return nil, errors.New("node status: nodeStatusUpdateFrequency and nodeLeaseDurationSeconds must be positive (defaulted configuration expected)")
	}
	if cfg.Hostname == "" {
		cfg.Hostname = cfg.NodeName
	}
	if cfg.Client == nil {
		cfg.Client = cfg.HeartbeatClient
	}
	if cfg.HeartbeatClient == nil {
		cfg.HeartbeatClient = cfg.Client
	}
	if cfg.StartingMessage == "" {
		cfg.StartingMessage = DefaultStartingMessage
	}
	c := &Controller{cfg: cfg, clock: cfg.Clock}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.status.NodeName = cfg.NodeName
	return c, nil
}

// Status is a snapshot of the reporting's state for `kernelet status`.
func (c *Controller) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// Node is the last known Node object (written or read), nil before the
// Node is registered or found.
func (c *Controller) Node() *v1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.node == nil {
		return nil
	}
	return c.node.DeepCopy()
}

// Run records the Starting event, renews the Lease in the background,
// registers the Node (retrying with back-off until it succeeds: an
// unreachable API server does not block the caller beyond Run itself),
// then updates its status every nodeStatusUpdateFrequency, the first time
// right after registration (once the runtime was asked, for at most
// runtimeCheckWait); until a status it computed says Ready (for at most 2
// minutes after start), also as soon as the inputs say it would be. A Node deleted behind its back is registered
// again (registerNode: true) or waited for. Run returns when ctx is done;
// it is called once.
func (c *Controller) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("node", c.cfg.NodeName)
	c.logger, c.started = logger, c.clock.Now()
	ctx = klog.NewContext(ctx, logger)
	c.event(v1.EventTypeNormal, EventStarting, c.cfg.StartingMessage)

	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); c.runLease(ctx) }()

	for ctx.Err() == nil {
		if !c.registerUntilDone(ctx) {
			return
		}
		err := c.statusLoop(ctx)
		if !errors.Is(err, errNodeGone) {
			return
		}
		logger.Info("Node was deleted; registering it again")
	}
}

// registerUntilDone registers (or, with registerNode false, finds) the
// Node, retrying with back-off; false when ctx ends first.
func (c *Controller) registerUntilDone(ctx context.Context) bool {
	wait := registerBackoffMin
	for {
		err := c.register(ctx)
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			c.recovered(klog.FromContext(ctx), &c.registerOut, "register node")
			return true
		}
		c.failed(klog.FromContext(ctx), &c.registerOut, "register node", err)
		select {
		case <-ctx.Done():
			return false
		case <-c.clock.After(wait):
		}
		wait = min(2*wait, registerBackoffMax)
	}
}

// register creates the Node, or adopts the existing one: it reconciles
// what this agent owns on it (Reconcile) and patches that. With
// registerNode false it only reads the Node.
func (c *Controller) register(ctx context.Context) error {
	nodes := c.cfg.Client.Nodes()
	if c.cfg.Kubelet.RegisterNode != nil && !*c.cfg.Kubelet.RegisterNode {
		n, err := nodes.Get(ctx, c.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get node (registerNode is false): %w", err)
		}
		c.registered(ctx, n, "Found node (registerNode is false)")
		return nil
	}
	now := c.clock.Now()
	desired, events := NewNode(&c.cfg, c.cfg.Inputs(ctx), now)
	created, err := nodes.Create(ctx, desired, metav1.CreateOptions{})
	if err == nil {
		c.registered(ctx, created, "Registered node")
		c.mu.Lock()
		c.status.LastStatusPatch, c.status.LastStatusCheck = now, now
		c.mu.Unlock()
		c.nodeEvents(events)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node: %w", err)
	}
	existing, err := nodes.Get(ctx, c.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get existing node: %w", err)
	}
	orig := existing.DeepCopy()
	if Reconcile(existing, &c.cfg) {
		patch, err := MetadataPatch(orig, existing)
		if err != nil {
			return err
		}
		if existing, err = nodes.Patch(ctx, c.cfg.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("reconcile existing node: %w", err)
		}
	}
	c.registered(ctx, existing, "Node was previously registered; adopted it")
	return nil
}

func (c *Controller) registered(ctx context.Context, n *v1.Node, msg string) {
	klog.FromContext(ctx).Info(msg, "uid", n.UID)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setNodeLocked(n)
	c.status.Registered = c.clock.Now()
}

// statusLoop updates the status now and then every period until ctx ends
// (nil) or the Node is gone (errNodeGone).
func (c *Controller) statusLoop(ctx context.Context) error {
	if !c.awaitRuntimeCheck(ctx) {
		return nil
	}
	t := c.clock.NewTicker(c.cfg.Kubelet.NodeStatusUpdateFrequency.Duration)
	defer t.Stop()
	for {
		err := c.updateStatus(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errNodeGone):
			return err
		case err != nil:
			c.failed(klog.FromContext(ctx), &c.statusOut, "update node status", err)
		default:
			c.recovered(klog.FromContext(ctx), &c.statusOut, "update node status")
		}
		if !c.waitNextUpdate(ctx, t.C()) {
			return nil
		}
	}
}

// awaitRuntimeCheck waits, once after start, until the inputs carry a
// runtime check (Runtime.LastSync set), checking every fastStatusInterval
// for at most runtimeCheckWait: the first status then does not say
// NotReady ("container runtime status check may not have completed yet")
// only because the runtime was not asked yet, which after a restart
// turned a Ready Node NotReady until the next period. False when ctx ends
// first.
func (c *Controller) awaitRuntimeCheck(ctx context.Context) bool {
	c.mu.Lock()
	done := c.runtimeAwaited
	c.runtimeAwaited = true
	c.mu.Unlock()
	if done {
		return true
	}
	deadline := c.clock.Now().Add(runtimeCheckWait)
	for c.cfg.Inputs(ctx).Runtime.LastSync.IsZero() && c.clock.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return false
		case <-c.clock.After(fastStatusInterval):
		}
	}
	return ctx.Err() == nil
}

// FastStatusUpdates reports whether the status is still checked every
// fastStatusInterval for readiness: after start, until a status the agent
// computed said Ready, for at most fastStatusFor (kubelet's fast status
// update at start, which then falls back to nodeStatusUpdateFrequency).
func FastStatusUpdates(readyComputed bool, sinceStart time.Duration) bool {
	return !readyComputed && sinceStart < fastStatusFor
}

// waitNextUpdate waits for the next status update: the next period, or —
// after start, until a status computed here says Ready — the moment the inputs say
// it would be Ready (checked every fastStatusInterval, as kubelet does).
// False when ctx ends first.
func (c *Controller) waitNextUpdate(ctx context.Context, period <-chan time.Time) bool {
	for {
		var fast <-chan time.Time
		c.mu.Lock()
		if FastStatusUpdates(c.readyComputed, c.clock.Since(c.started)) {
			fast = c.clock.After(fastStatusInterval)
		}
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return false
		case <-period:
			return true
		case <-fast:
			if c.wouldBeReady(ctx) {
				return true
			}
		}
	}
}

// wouldBeReady reports whether a status computed now would say Ready.
func (c *Controller) wouldBeReady(ctx context.Context) bool {
	capacity := Capacity(c.cfg.Machine, c.cfg.Kubelet.MaxPods, c.cfg.Kubelet.PodsPerCore)
	return ReadyError(c.cfg.Inputs(ctx), capacity, c.clock.Now()) == nil
}

// updateStatus computes the status and writes it when it changed or the
// report frequency passed, trying up to statusUpdateRetries times; from
// the second failure on, OnRepeatedHeartbeatFailure is called after each.
func (c *Controller) updateStatus(ctx context.Context) error {
	in := c.cfg.Inputs(ctx)
	var errs []error
	for try := range statusUpdateRetries {
		err := c.tryUpdateStatus(ctx, in, try)
		if err == nil || errors.Is(err, errNodeGone) || ctx.Err() != nil {
			return err
		}
		errs = append(errs, err)
		if try > 0 && c.cfg.OnRepeatedHeartbeatFailure != nil {
			c.cfg.OnRepeatedHeartbeatFailure()
		}
	}
	return fmt.Errorf("%d attempts: %w", statusUpdateRetries, errors.Join(errs...))
}

// tryUpdateStatus reads the Node (the first try from the API server's
// cache, as kubelet does), computes its status and patches it if needed.
func (c *Controller) tryUpdateStatus(ctx context.Context, in Inputs, try int) error {
	ctx, cancel := context.WithTimeout(ctx, c.heartbeatTimeout())
	defer cancel()
	nodes := c.cfg.HeartbeatClient.Nodes()
	opts := metav1.GetOptions{}
	if try == 0 {
		opts.ResourceVersion = "0"
	}
	n, err := nodes.Get(ctx, c.cfg.NodeName, opts)
	if apierrors.IsNotFound(err) && opts.ResourceVersion != "" {
		// The cache may not have seen a Node just created: ask etcd.
		n, err = nodes.Get(ctx, c.cfg.NodeName, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) && (c.cfg.Kubelet.RegisterNode == nil || *c.cfg.Kubelet.RegisterNode) {
		return errNodeGone
	}
	if err != nil {
		return fmt.Errorf("get node: %w", err)
	}
	c.setNode(n)
	now := c.clock.Now()
	updated := n.DeepCopy()
	events := SetStatus(updated, &c.cfg, in, now)
	c.mu.Lock()
	last := c.status.LastStatusPatch
	c.readyComputed = c.readyComputed || isReady(&updated.Status)
	c.mu.Unlock()
	if !ShouldPatch(StatusChanged(&n.Status, &updated.Status), last, now, c.cfg.Kubelet.NodeStatusReportFrequency.Duration) {
		c.mu.Lock()
		c.status.LastStatusCheck = now
		c.mu.Unlock()
		return nil
	}
	patch, err := StatusPatch(n, updated)
	if err != nil {
		return err
	}
	out, err := nodes.Patch(ctx, c.cfg.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patch node status: %w", err)
	}
	c.setNode(out)
	c.mu.Lock()
	c.status.LastStatusPatch, c.status.LastStatusCheck = now, now
	c.mu.Unlock()
	c.nodeEvents(events)
	return nil
}

func (c *Controller) setNode(n *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setNodeLocked(n)
}

func (c *Controller) setNodeLocked(n *v1.Node) {
	c.node, c.nodeUID = n, n.UID
}

// isReady reports whether st's Ready condition is True.
func isReady(st *v1.NodeStatus) bool {
	for _, cond := range st.Conditions {
		if cond.Type == v1.NodeReady {
			return cond.Status == v1.ConditionTrue
		}
	}
	return false
}

// heartbeatTimeout bounds one status call: min(lease duration, update
// period), as the heartbeat client's timeout.
func (c *Controller) heartbeatTimeout() time.Duration { return HeartbeatTimeout(c.cfg.Kubelet) }

// nodeEvents records the conditions' transition events with kubelet's
// message.
func (c *Controller) nodeEvents(reasons []string) {
	for _, r := range reasons {
		c.event(v1.EventTypeNormal, r, fmt.Sprintf("Node %s status is now: %s", c.cfg.NodeName, r))
	}
}

// event records an event on the Node. The reference's UID is the node
// name, as kubelet's (events then match before and after re-registration).
func (c *Controller) event(typ, reason, msg string) {
	if c.cfg.Recorder == nil {
		return
	}
	ref := &v1.ObjectReference{Kind: "Node", Name: c.cfg.NodeName, UID: types.UID(c.cfg.NodeName)}
	c.cfg.Recorder.Event(ref, typ, reason, msg)
}

// failed records an error of one loop, logging it once per outage.
func (c *Controller) failed(logger logr.Logger, o *outage, what string, err error) {
	c.mu.Lock()
	first := o.since.IsZero()
	if first {
		o.since = c.clock.Now()
	}
	c.status.LastError, c.status.LastErrorTime = fmt.Sprintf("%s: %v", what, err), c.clock.Now()
	c.mu.Unlock()
	if first {
		logger.Error(err, "Failed to "+what+"; retrying, further failures are logged at V(4) until it succeeds")
		return
	}
	logger.V(4).Info("Still failing to "+what, "err", err)
}

// recovered ends an outage of one loop, logging how long it lasted.
func (c *Controller) recovered(logger logr.Logger, o *outage, what string) {
	c.mu.Lock()
	since := o.since
	o.since = time.Time{}
	c.mu.Unlock()
	if !since.IsZero() {
		logger.Info("Managed to "+what+" after failures", "failingFor", c.clock.Since(since).Round(time.Millisecond))
	}
}
