package gc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

// ContainerGCConfig wires a ContainerGC.
type ContainerGCConfig struct {
	Runtime internalapi.RuntimeService
	Policy  ContainerPolicy
	// PodState says which pods exist (required).
	PodState PodStateFunc
	// PodLogsDir is podLogsDir: the log directories of removed pods left
	// there are removed too ("" leaves them).
	PodLogsDir string
	// Recorder and Node receive ContainerGCFailed events (nil: logged only).
	Recorder record.EventRecorder
	Node     *v1.ObjectReference
	// Clock is the time source; nil means the real clock.
	Clock clock.Clock
}

// ContainerGC removes dead containers, their log files and sandboxes no
// pod needs. Passes are serialized.
type ContainerGC struct {
	cfg ContainerGCConfig
	mu  sync.Mutex
}

// NewContainerGC returns a container collector.
func NewContainerGC(cfg ContainerGCConfig) (*ContainerGC, error) {
	if cfg.Runtime == nil || cfg.PodState == nil {
		return nil, errors.New("container gc: runtime and pod state are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &ContainerGC{cfg: cfg}, nil
}

// GarbageCollect is one periodic pass: the policy applied to pods that
// exist, everything dead of removed pods.
func (g *ContainerGC) GarbageCollect(ctx context.Context) error { return g.collect(ctx, false) }

// DeleteAllUnusedContainers reclaims what it can under disk pressure: the
// periodic pass, plus every dead container and sandbox of finished pods.
func (g *ContainerGC) DeleteAllUnusedContainers(ctx context.Context) error {
	return g.collect(ctx, true)
}

// Run collects every period (ContainerGCPeriod when 0), the first time at
// once, until ctx ends; a failed pass is logged and recorded as a
// ContainerGCFailed event on the node.
func (g *ContainerGC) Run(ctx context.Context, period time.Duration) {
	if period <= 0 {
		period = ContainerGCPeriod
	}
	log := klog.FromContext(ctx)
	for {
		if err := g.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Container garbage collection failed")
			if g.cfg.Recorder != nil && g.cfg.Node != nil {
				g.cfg.Recorder.Event(g.cfg.Node, v1.EventTypeWarning, EventContainerGCFailed, err.Error())
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-g.cfg.Clock.After(period):
		}
	}
}

func (g *ContainerGC) collect(ctx context.Context, reclaim bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	log := klog.FromContext(ctx)
	ctrs, sbs, err := g.list(ctx)
	if err != nil {
		return err
	}
	sel := SelectContainers(ctrs, sbs, g.cfg.Policy, g.cfg.PodState, g.cfg.Clock.Now(), reclaim)
	var errs []error
	for _, c := range sel.Containers {
		log.V(2).Info("Removing dead container", "podUID", c.PodUID, "container", c.Name, "containerID", c.ID)
		if err := g.removeContainer(ctx, c.ID); err != nil {
			errs = append(errs, err)
		}
	}
	for _, sb := range sel.Sandboxes {
		log.V(2).Info("Removing pod sandbox", "podUID", sb.PodUID, "sandboxID", sb.ID)
		if err := g.removeSandbox(ctx, sb.ID); err != nil {
			errs = append(errs, err)
		}
	}
	if g.cfg.PodLogsDir != "" {
		errs = append(errs, g.removePodLogDirs(ctx, ctrs, sbs))
	}
	return errors.Join(errs...)
}

// list reads the containers and sandboxes that carry kernelet's pod labels
// (others are not the agent's and are never touched).
func (g *ContainerGC) list(ctx context.Context) ([]Container, []Sandbox, error) {
	rcs, err := g.cfg.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("list containers: %w", err)
	}
	rsbs, err := g.cfg.Runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("list sandboxes: %w", err)
	}
	var ctrs []Container
	for _, c := range rcs {
		info, _ := podconfig.ParseContainer(c.GetLabels(), c.GetAnnotations())
		if info.PodUID == "" || info.ContainerName == "" {
			continue
		}
		ctrs = append(ctrs, Container{ID: c.Id, SandboxID: c.PodSandboxId, PodUID: types.UID(info.PodUID),
			Name: info.ContainerName, Running: c.State == runtimeapi.ContainerState_CONTAINER_RUNNING,
			Created:   c.State == runtimeapi.ContainerState_CONTAINER_CREATED,
			CreatedAt: time.Unix(0, c.CreatedAt)})
	}
	var sbs []Sandbox
	for _, sb := range rsbs {
		info, err := podconfig.ParseSandboxLabels(sb.GetLabels())
		if err != nil {
			continue
		}
		sbs = append(sbs, Sandbox{ID: sb.Id, PodUID: types.UID(info.PodUID),
			Ready: sb.State == runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: time.Unix(0, sb.CreatedAt)})
	}
	return ctrs, sbs, nil
}

// removeContainer removes the container, then its log file and the log's
// rotated files. A container already gone is not an error.
func (g *ContainerGC) removeContainer(ctx context.Context, id string) error {
	var logPath string
	if resp, err := g.cfg.Runtime.ContainerStatus(ctx, id, false); err == nil {
		logPath = resp.GetStatus().GetLogPath()
	} else if isNotFound(err) {
		return nil
	}
	if err := g.cfg.Runtime.RemoveContainer(ctx, id); err != nil && !isNotFound(err) {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return removeLogFiles(logPath)
}

// removeLogFiles removes a container's log file and its rotated siblings
// (<log>.<timestamp>[.gz]).
func removeLogFiles(logPath string) error {
	if logPath == "" || !filepath.IsAbs(logPath) {
		return nil
	}
	rotated, _ := filepath.Glob(globEscape(logPath) + ".*")
	var errs []error
	for _, p := range append([]string{logPath}, rotated...) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove container log: %w", err))
		}
	}
	return errors.Join(errs...)
}

func globEscape(p string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(p)
}

// removeSandbox stops (in case nobody did) and removes a sandbox.
func (g *ContainerGC) removeSandbox(ctx context.Context, id string) error {
	if err := g.cfg.Runtime.StopPodSandbox(ctx, id); err != nil && !isNotFound(err) {
		return fmt.Errorf("stop sandbox %s: %w", id, err)
	}
	if err := g.cfg.Runtime.RemovePodSandbox(ctx, id); err != nil && !isNotFound(err) {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	return nil
}

// removePodLogDirs removes the log directories (<namespace>_<name>_<uid>)
// of removed pods that have nothing left in the runtime.
func (g *ContainerGC) removePodLogDirs(ctx context.Context, ctrs []Container, sbs []Sandbox) error {
	entries, err := os.ReadDir(g.cfg.PodLogsDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("pod logs dir: %w", err)
	}
	inRuntime := map[types.UID]bool{}
	for _, c := range ctrs {
		inRuntime[c.PodUID] = true
	}
	for _, sb := range sbs {
		inRuntime[sb.PodUID] = true
	}
	var errs []error
	for _, e := range entries {
		uid, ok := PodLogDirUID(e.Name())
		if !ok || !e.IsDir() || inRuntime[uid] || g.cfg.PodState(uid) != PodRemoved {
			continue
		}
		klog.FromContext(ctx).V(2).Info("Removing log directory of removed pod", "dir", e.Name())
		if err := os.RemoveAll(filepath.Join(g.cfg.PodLogsDir, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("remove pod log dir: %w", err))
		}
	}
	return errors.Join(errs...)
}

// PodLogDirUID is the pod UID of a pod log directory name
// (<namespace>_<name>_<uid>, podconfig.PodLogDir).
func PodLogDirUID(name string) (types.UID, bool) {
	parts := strings.Split(name, "_")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", false
	}
	return types.UID(parts[2]), true
}

// isNotFound: the runtime no longer has the object (done already).
func isNotFound(err error) bool {
	return err != nil && (status.Code(err) == codes.NotFound || strings.Contains(err.Error(), "not found"))
}
