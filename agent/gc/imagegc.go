package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/internal/imageref"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// ImageGCConfig wires an ImageGC.
type ImageGCConfig struct {
	Images  internalapi.ImageManagerService
	Runtime internalapi.RuntimeService
	Policy  ImagePolicy
	// FsStats returns the image filesystem's capacity and available
	// bytes; nil: statfs of the mountpoint CRI ImageFsInfo names.
	FsStats func(ctx context.Context) (capacity, available int64, err error)
	// PodImages lists the images the pods the agent runs name in their
	// specs: they count as in use even before a container exists (nil:
	// only containers count).
	PodImages func() []string
	// Recorder and Node receive the node events (nil: logged only).
	Recorder record.EventRecorder
	Node     *v1.ObjectReference
	Clock    clock.Clock
	// Metrics are kubelet's kubelet_image_garbage_collected_total
	// (NewImageGCMetrics; nil: not exported).
	Metrics *ImageGCMetrics
}

// ImageGCMetrics are kubelet's kubelet_image_garbage_collected_total{reason}.
type ImageGCMetrics struct {
	collected *prometheus.CounterVec
}

// NewImageGCMetrics returns the image GC metrics, registered with reg (nil:
// not registered).
func NewImageGCMetrics(reg prometheus.Registerer) *ImageGCMetrics {
	return &ImageGCMetrics{collected: promauto.With(reg).NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet",
		Name: "image_garbage_collected_total",
		Help: "Total number of images garbage collected by the kubelet, whether through disk usage or image age."},
		[]string{"reason"})}
}

// Reasons of kubelet_image_garbage_collected_total (kubelet's).
const (
	ReasonAge   = "age"
	ReasonSpace = "space"
)

// ImageGC removes unused images: least recently used first while the
// image filesystem is over the high threshold, and those unused for longer
// than the maximum age. It tracks when each image was first seen and last
// used in memory, as kubelet does. Passes are serialized.
type ImageGC struct {
	cfg   ImageGCConfig
	began time.Time

	collected *prometheus.CounterVec

	mu      sync.Mutex
	records map[string]*ImageRecord
	sandbox string // the runtime's sandbox image, once read

	// runMu serialises the collections (the periodic one and on-demand
	// calls): two at once would remove and count the same images twice.
	runMu sync.Mutex
}

// NewImageGC returns an image collector; its maximum-age clock starts now.
func NewImageGC(cfg ImageGCConfig) (*ImageGC, error) {
	if cfg.Images == nil || cfg.Runtime == nil {
		return nil, errors.New("image gc: image and runtime services are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewImageGCMetrics(nil)
	}
	g := &ImageGC{cfg: cfg, began: cfg.Clock.Now(), records: map[string]*ImageRecord{}, collected: cfg.Metrics.collected}
	if g.cfg.FsStats == nil {
		g.cfg.FsStats = g.criFsStats
	}
	return g, nil
}

// Detect lists the images and the containers, records new images as
// detected now and in-use ones as used now, forgets images that are gone,
// and returns the records.
func (g *ImageGC) Detect(ctx context.Context) ([]ImageRecord, error) {
	imgs, err := g.cfg.Images.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	ctrs, err := g.cfg.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	used := map[string]bool{}
	for _, c := range ctrs {
		used[c.GetImageRef()] = true
		used[c.GetImage().GetImage()] = true
	}
	var names []string
	if g.cfg.PodImages != nil {
		names = g.cfg.PodImages()
	}
	if sb := g.sandboxImage(ctx); sb != "" {
		names = append(names, sb)
	}
	wanted := normalizedSet(names)
	pinnedByName := func(img *runtimeapi.Image) bool {
		for _, n := range append(img.GetRepoTags(), img.GetRepoDigests()...) {
			if wanted[imageref.Normalize(n)] {
				return true
			}
		}
		return false
	}

	now := g.cfg.Clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	seen := map[string]bool{}
	out := make([]ImageRecord, 0, len(imgs))
	for _, img := range imgs {
		id := img.GetId()
		seen[id] = true
		r := g.records[id]
		if r == nil {
			r = &ImageRecord{ID: id, FirstDetected: now}
			g.records[id] = r
		}
		r.Size = int64(img.GetSize())
		r.InUse = used[id] || pinnedByName(img) || usedByName(img, used)
		r.Pinned = img.GetPinned()
		if r.InUse {
			r.LastUsed = now
		}
		out = append(out, *r)
	}
	for id := range g.records {
		if !seen[id] {
			delete(g.records, id)
		}
	}
	return out, nil
}

// usedByName: a container names the image by one of its tags or digests.
func usedByName(img *runtimeapi.Image, used map[string]bool) bool {
	for _, n := range append(img.GetRepoTags(), img.GetRepoDigests()...) {
		if used[n] {
			return true
		}
	}
	return false
}

// GarbageCollect is one periodic pass: images unused for longer than the
// maximum age go; then, when the image filesystem is at or over the high
// threshold, unused images old enough go least recently used first until
// it is below the low threshold. Falling short records
// FreeDiskSpaceFailed on the node and is an error.
func (g *ImageGC) GarbageCollect(ctx context.Context) error {
	g.runMu.Lock()
	defer g.runMu.Unlock()
	log := klog.FromContext(ctx)
	recs, err := g.Detect(ctx)
	if err != nil {
		return err
	}
	now := g.cfg.Clock.Now()
	old, cands := OldImages(ImageEvictionOrder(recs), g.cfg.Policy, now, g.began)
	var errs []error
	for _, r := range old {
		log.Info("Removing image unused for longer than the maximum age", "imageID", r.ID, "size", r.Size, "lastUsed", r.LastUsed, "maxAge", g.cfg.Policy.MaxAge)
		if err := g.remove(ctx, r, ReasonAge); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("wanted to free images older than %v, encountered errors in image deletion: %w", g.cfg.Policy.MaxAge, errors.Join(errs...))
	}
	capacity, available, err := g.cfg.FsStats(ctx)
	if err != nil {
		return fmt.Errorf("image filesystem stats: %w", err)
	}
	u, err := ImageFsUsageOf(capacity, available, g.cfg.Policy)
	if err != nil {
		g.event(EventInvalidDiskCapacity, err.Error())
		return err
	}
	if !u.Over {
		return nil
	}
	log.Info("Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", u.UsagePercent, "highThreshold", g.cfg.Policy.HighThresholdPercent, "amountToFree", u.BytesToFree,
		"lowThreshold", g.cfg.Policy.LowThresholdPercent)
	freed, err := g.free(ctx, FreeCandidates(cands, g.cfg.Policy, now), u.BytesToFree)
	if err != nil {
		return err
	}
	if freed < u.BytesToFree {
		msg := FreeDiskSpaceFailedMessage(u.UsagePercent, u.CapacityBytes, freed)
		g.event(EventFreeDiskSpaceFailed, msg)
		return errors.New(msg)
	}
	return nil
}

// DeleteUnusedImages removes every unused image old enough (MinAge),
// whatever the disk usage: what the eviction manager calls under image
// filesystem pressure.
func (g *ImageGC) DeleteUnusedImages(ctx context.Context) error {
	g.runMu.Lock()
	defer g.runMu.Unlock()
	klog.FromContext(ctx).Info("Attempting to delete unused images")
	recs, err := g.Detect(ctx)
	if err != nil {
		return err
	}
	_, err = g.free(ctx, FreeCandidates(ImageEvictionOrder(recs), g.cfg.Policy, g.cfg.Clock.Now()), math.MaxInt64)
	return err
}

// free removes candidates in order until bytesToFree bytes are freed,
// going on past failures; it returns the bytes freed.
func (g *ImageGC) free(ctx context.Context, cands []ImageRecord, bytesToFree int64) (int64, error) {
	var freed int64
	var errs []error
	for _, r := range cands {
		klog.FromContext(ctx).Info("Removing image to free bytes", "imageID", r.ID, "size", r.Size)
		if err := g.remove(ctx, r, ReasonSpace); err != nil {
			errs = append(errs, err)
			continue
		}
		freed += r.Size
		if freed >= bytesToFree {
			break
		}
	}
	if len(errs) > 0 {
		return freed, fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w", bytesToFree, freed, errors.Join(errs...))
	}
	return freed, nil
}

func (g *ImageGC) remove(ctx context.Context, r ImageRecord, reason string) error {
	if err := g.cfg.Images.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: r.ID}); err != nil && !isNotFound(err) {
		return fmt.Errorf("remove image %s: %w", r.ID, err)
	}
	g.collected.WithLabelValues(reason).Inc()
	g.mu.Lock()
	delete(g.records, r.ID)
	g.mu.Unlock()
	return nil
}

// Run seeds the records at once, then collects every period
// (ImageGCPeriod when 0) until ctx ends. A pass that fails is logged; the
// second failure in a row and each after it is recorded as ImageGCFailed
// on the node (kubelet's: the first may be stats not ready yet).
func (g *ImageGC) Run(ctx context.Context, period time.Duration) {
	if period <= 0 {
		period = ImageGCPeriod
	}
	log := klog.FromContext(ctx)
	if _, err := g.Detect(ctx); err != nil && ctx.Err() == nil {
		log.Info("Failed to detect images", "err", err)
	}
	if g.cfg.Policy.Disabled() {
		log.V(2).Info("Image garbage collection disabled (imageGCHighThresholdPercent 100, no imageMaximumGCAge)")
		return
	}
	failed := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.cfg.Clock.After(period):
		}
		err := g.GarbageCollect(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil && failed:
			log.Error(err, "Image garbage collection failed multiple times in a row")
			g.event(EventImageGCFailed, err.Error())
		case err != nil:
			log.Error(err, "Image garbage collection failed once. Stats initialization may not have completed yet")
			failed = true
		default:
			if failed {
				log.Info("Image garbage collection succeeded")
			}
			failed = false
		}
	}
}

func (g *ImageGC) event(reason, msg string) {
	if g.cfg.Recorder != nil && g.cfg.Node != nil {
		g.cfg.Recorder.Event(g.cfg.Node, v1.EventTypeWarning, reason, msg)
	}
}

// criFsStats is statfs of the image filesystem the runtime reports.
func (g *ImageGC) criFsStats(ctx context.Context) (int64, int64, error) {
	resp, err := g.cfg.Images.ImageFsInfo(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("image fs info: %w", err)
	}
	fss := resp.GetImageFilesystems()
	if len(fss) == 0 || fss[0].GetFsId().GetMountpoint() == "" {
		return 0, 0, errors.New("image fs info: the runtime names no image filesystem")
	}
	st, err := cgroups.Filesystem(ctx, fss[0].GetFsId().GetMountpoint())
	if err != nil {
		return 0, 0, err
	}
	return int64(st.CapacityBytes), int64(st.AvailableBytes), nil
}

// sandboxImage is the runtime's sandbox (pause) image, from its verbose
// status (containerd: config.sandboxImage); "" when it does not say. It
// is never removed: runtimes that do not pin it would otherwise lose it.
func (g *ImageGC) sandboxImage(ctx context.Context) string {
	g.mu.Lock()
	known := g.sandbox
	g.mu.Unlock()
	if known != "" {
		return known
	}
	resp, err := g.cfg.Runtime.Status(ctx, true)
	if err != nil {
		return ""
	}
	var cfg struct {
		SandboxImage string `json:"sandboxImage"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["config"]), &cfg); err != nil || cfg.SandboxImage == "" {
		return ""
	}
	g.mu.Lock()
	g.sandbox = cfg.SandboxImage
	g.mu.Unlock()
	return cfg.SandboxImage
}
