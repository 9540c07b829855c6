package pressure

import (
	"context"
	"errors"
	"fmt"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/volume"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// cri is what the runtime tells of storage: the image filesystem
// (ImageFsInfo; whether it is another one than rootDir's) and the
// writable layers (ContainerStats); nil services leave them unmeasured.
type cri struct {
	runtime internalapi.RuntimeService
	images  internalapi.ImageManagerService
	rootDir string
}

// refreshRuntime reads the image filesystem and the writable layers.
func (s *localStorage) refreshRuntime(ctx context.Context) {
	log := klog.FromContext(ctx)
	s.imageFs, s.contFs, s.imgMount, s.contMount = nil, nil, "", ""
	if s.images != nil {
		if img, cont, dedicated, err := s.imageFilesystems(ctx); err != nil {
			log.V(2).Info("Eviction: image filesystem not observed", "err", err)
		} else {
			s.imageFs, s.contFs, s.dedicated = img, cont, dedicated
		}
	}
	s.layers = map[string]eviction.FsUsage{}
	if s.runtime == nil {
		return
	}
	cs, err := s.runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		log.V(2).Info("Eviction: container writable layers not measured", "err", err)
		return
	}
	for _, c := range cs {
		if wl := c.GetWritableLayer(); wl != nil && wl.GetUsedBytes() != nil {
			s.layers[c.GetAttributes().GetId()] = eviction.FsUsage{Bytes: int64(wl.GetUsedBytes().GetValue()),
				Inodes: int64(wl.GetInodesUsed().GetValue())}
		}
	}
}

// imageFilesystems are the runtime's image filesystem and the one of its
// writable layers (the image filesystem's when the runtime names none),
// and whether the image filesystem is another than the root dir's.
func (s *localStorage) imageFilesystems(ctx context.Context) (img, cont *eviction.FsStats, dedicated bool, _ error) {
	resp, err := s.images.ImageFsInfo(ctx)
	if err != nil {
		return nil, nil, false, fmt.Errorf("ImageFsInfo: %w", err)
	}
	fss := resp.GetImageFilesystems()
	if len(fss) == 0 || fss[0].GetFsId().GetMountpoint() == "" {
		return nil, nil, false, errors.New("ImageFsInfo names no image filesystem")
	}
	mp := fss[0].GetFsId().GetMountpoint()
	if img, err = s.statfs(ctx, mp); err != nil {
		return nil, nil, false, err
	}
	cont, contMount := img, ""
	if cfs := resp.GetContainerFilesystems(); len(cfs) > 0 && cfs[0].GetFsId().GetMountpoint() != "" {
		contMount = cfs[0].GetFsId().GetMountpoint()
		if cont, err = s.statfs(ctx, contMount); err != nil {
			return nil, nil, false, err
		}
	}
	imgDev, err1 := volume.Device(mp)
	rootDev, err2 := volume.Device(s.rootDir)
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, false, err
	}
	s.imgMount, s.contMount = mp, contMount
	return img, cont, imgDev != rootDev, nil
}

// restat reads the image and container filesystems' statfs again, at the
// mountpoints the runtime named at the last refresh (nothing before the
// first): cheap, so each decision sees their space now while the runtime
// is asked again only once the period passed. A failed read keeps the
// previous value.
func (s *localStorage) restat(ctx context.Context) {
	if s.imgMount == "" || s.imageFs == nil {
		return
	}
	img, err := s.statfs(ctx, s.imgMount)
	if err != nil {
		return
	}
	cont := img
	if s.contMount != "" {
		if cont, err = s.statfs(ctx, s.contMount); err != nil {
			return
		}
	}
	s.imageFs, s.contFs = img, cont
}

// statfs is statFs unless a test set statFsFunc.
func (s *localStorage) statfs(ctx context.Context, path string) (*eviction.FsStats, error) {
	if s.statFsFunc != nil {
		return s.statFsFunc(ctx, path)
	}
	return statFs(ctx, path)
}

func statFs(ctx context.Context, path string) (*eviction.FsStats, error) {
	fs, err := cgroups.Filesystem(ctx, path)
	if err != nil {
		return nil, err
	}
	return &eviction.FsStats{CapacityBytes: int64(fs.CapacityBytes), AvailableBytes: int64(fs.AvailableBytes),
		Inodes: int64(fs.Inodes.Or(0)), InodesFree: int64(fs.InodesFree.Or(0))}, nil
}
