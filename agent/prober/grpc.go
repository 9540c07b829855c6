package prober

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// runGRPC runs a grpc probe: the gRPC health protocol's Check for service
// at addr, plaintext, within the timeout; SERVING succeeds.
func (h *handlers) runGRPC(ctx context.Context, addr, service string, timeout time.Duration) (Outcome, string, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent(h.userAgent))
	if err != nil {
		return OutcomeFailure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	return GRPCOutcome(resp, err, timeout)
}

// GRPCOutcome classifies a health Check's answer with kubelet's messages.
func GRPCOutcome(resp *healthpb.HealthCheckResponse, err error, timeout time.Duration) (Outcome, string, error) {
	if err != nil {
		switch status.Code(err) {
		case codes.Unimplemented:
			return OutcomeFailure, fmt.Sprintf("this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", status.Convert(err).Message()), nil
		case codes.DeadlineExceeded:
			return OutcomeFailure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
		}
		return OutcomeFailure, fmt.Sprintf("error: health rpc probe failed: %+v", err), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return OutcomeFailure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return OutcomeSuccess, "service is serving", nil
}
