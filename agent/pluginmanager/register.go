package pluginmanager

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// registerPlugin runs one registration against the socket at path: GetInfo,
// the handler's validation and registration, and the status sent back.
func registerPlugin(ctx context.Context, path string, handlers map[string]Handler) (Plugin, error) {
	p := Plugin{SocketPath: path}
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return p, fmt.Errorf("RegisterPlugin error -- dial failed at socket %s, err: %w", path, err)
	}
	defer func() { _ = conn.Close() }()
	client := registerapi.NewRegistrationClient(conn)
	infoCtx, cancel := context.WithTimeout(ctx, getInfoTimeout)
	info, err := client.GetInfo(infoCtx, &registerapi.InfoRequest{})
	cancel()
	if err != nil {
		return p, fmt.Errorf("RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket %s, err: %w", path, err)
	}
	p.Type, p.Name, p.Endpoint, p.Versions = info.Type, info.Name, info.Endpoint, info.SupportedVersions
	if p.Endpoint == "" {
		p.Endpoint = path
	}
	h, ok := handlers[p.Type]
	if !ok {
		return p, notify(ctx, client, fmt.Sprintf("RegisterPlugin error -- no handler registered for plugin type: %s at socket %s", p.Type, path))
	}
	if err := h.ValidatePlugin(ctx, p.Name, p.Endpoint, p.Versions); err != nil {
		return p, notify(ctx, client, fmt.Sprintf("RegisterPlugin error -- plugin validation failed with err: %v", err))
	}
	if err := h.RegisterPlugin(ctx, p.Name, p.Endpoint, p.Versions); err != nil {
		return p, notify(ctx, client, fmt.Sprintf("RegisterPlugin error -- plugin registration failed with err: %v", err))
	}
	if err := notify(ctx, client, ""); err != nil {
		h.DeRegisterPlugin(ctx, p.Name, p.Endpoint)
		return p, fmt.Errorf("RegisterPlugin error -- failed to send registration status at socket %s, err: %w", path, err)
	}
	return p, nil
}

// notify sends the registration status (registered when msg is empty) and
// returns msg as the error, joined with the RPC's own failure.
func notify(ctx context.Context, client registerapi.RegistrationClient, msg string) error {
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	_, err := client.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: msg == "", Error: msg})
	if msg == "" {
		return err
	}
	if err != nil {
		return fmt.Errorf("%s: %w", msg, err)
	}
	return errors.New(msg)
}
