package criproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	// Registers the CRI messages and services for decoding.
	_ "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The CRI services the proxy forwards; anything else is Unimplemented.
const (
	RuntimeService = "runtime.v1.RuntimeService"
	ImageService   = "runtime.v1.ImageService"
)

// maxMsgSize bounds one message each way (kubelet's CRI client allows 16 MiB).
const maxMsgSize = 64 << 20

// maxCalls bounds the record; the oldest calls are dropped beyond it.
const maxCalls = 100000

// Call is one CRI call the proxy received.
type Call struct {
	// Method is the short method name, e.g. "StopContainer".
	Method string
	// Service is RuntimeService or ImageService.
	Service string
	// Time is when the proxy received the call, before any delay.
	Time time.Time
	// Request is the decoded request (e.g. *runtimeapi.StopContainerRequest),
	// nil when it could not be decoded.
	Request proto.Message
	// Done is when the call ended: the upstream's reply relayed, or the
	// call failed (zero while it runs).
	Done time.Time

	seq uint64 // the record's own order, to find the call again at its end
}

// Hook runs for every call before it is forwarded. A non-nil error fails
// the call with that error (use status.Error for a specific code); it may
// block to delay the call (honouring ctx).
type Hook func(ctx context.Context, c Call) error

// Proxy is a running CRI proxy.
type Proxy struct {
	socket   string
	upstream *grpc.ClientConn
	srv      *grpc.Server
	done     chan struct{}
	serveErr error

	mu       sync.Mutex
	calls    []Call
	watchers map[int]func(Call)
	nextID   int
	seq      uint64 // the last call recorded
	delays   map[string]time.Duration
	errs     map[string]error
	hook     Hook
}

// Start listens on the unix socket path socket (removed first if stale)
// and forwards to upstream, a CRI endpoint ("unix:///run/containerd.sock"
// or a plain socket path). Close stops it.
func Start(socket, upstream string) (*Proxy, error) {
	if !strings.HasPrefix(upstream, "unix://") {
		upstream = "unix://" + upstream
	}
	cc, err := grpc.NewClient(upstream,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)))
	if err != nil {
		return nil, fmt.Errorf("criproxy: upstream %s: %w", upstream, err)
	}
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		cc.Close()
		return nil, fmt.Errorf("criproxy: %w", err)
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		cc.Close()
		return nil, fmt.Errorf("criproxy: listen: %w", err)
	}
	p := &Proxy{
		socket: socket, upstream: cc, done: make(chan struct{}),
		watchers: map[int]func(Call){}, delays: map[string]time.Duration{}, errs: map[string]error{},
	}
	p.srv = grpc.NewServer(
		grpc.ForceServerCodec(rawCodec{}),
		grpc.UnknownServiceHandler(p.handle),
		grpc.MaxRecvMsgSize(maxMsgSize), grpc.MaxSendMsgSize(maxMsgSize))
	go func() {
		defer close(p.done)
		p.serveErr = p.srv.Serve(l)
	}()
	return p, nil
}

// Endpoint is the proxy's CRI endpoint, "unix://<socket>".
func (p *Proxy) Endpoint() string { return "unix://" + p.socket }

// Socket is the path of the proxy's unix socket.
func (p *Proxy) Socket() string { return p.socket }

// Close stops the server (cancelling the calls in flight), closes the
// upstream connection and removes the socket.
func (p *Proxy) Close() error {
	p.srv.Stop()
	<-p.done
	errs := []error{p.upstream.Close()}
	if err := os.Remove(p.socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	if p.serveErr != nil && !errors.Is(p.serveErr, grpc.ErrServerStopped) {
		errs = append(errs, p.serveErr)
	}
	return errors.Join(errs...)
}

// SetDelay delays every later call of method (short name, e.g.
// "StopContainer") by d before it is forwarded; 0 removes the delay.
func (p *Proxy) SetDelay(method string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d <= 0 {
		delete(p.delays, method)
		return
	}
	p.delays[method] = d
}

// SetError fails every later call of method with err without forwarding
// it (use status.Error for a gRPC code); nil removes the error.
func (p *Proxy) SetError(method string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		delete(p.errs, method)
		return
	}
	p.errs[method] = err
}

// SetHook installs h (nil removes it); it runs after the delay of
// SetDelay and before the error of SetError.
func (p *Proxy) SetHook(h Hook) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hook = h
}

// Calls returns the recorded calls of method received at or after since
// ("" for every method), oldest first.
func (p *Proxy) Calls(method string, since time.Time) []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Call
	for _, c := range p.calls {
		if (method == "" || c.Method == method) && !c.Time.Before(since) {
			out = append(out, c)
		}
	}
	return out
}

// Watch calls fn for every later call as it arrives (on the call's own
// goroutine, so fn must be quick); the returned function stops it.
func (p *Proxy) Watch(fn func(Call)) (stop func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := p.nextID
	p.nextID++
	p.watchers[id] = fn
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.watchers, id)
	}
}

// action is what to do with a call: wait, then run the hook, then fail.
type action struct {
	delay time.Duration
	hook  Hook
	err   error
}

// record stores c, tells the watchers and returns what to do with it.
func (p *Proxy) record(c *Call) action {
	p.mu.Lock()
	if len(p.calls) >= maxCalls {
		p.calls = append(p.calls[:0], p.calls[len(p.calls)-maxCalls/2:]...)
	}
	p.seq++
	c.seq = p.seq
	p.calls = append(p.calls, *c)
	ws := make([]func(Call), 0, len(p.watchers))
	for _, w := range p.watchers {
		ws = append(ws, w)
	}
	a := action{delay: p.delays[c.Method], hook: p.hook, err: p.errs[c.Method]}
	p.mu.Unlock()
	for _, w := range ws {
		w(*c)
	}
	return a
}

// ended stamps the end of the call c at now (a call dropped from the
// record meanwhile is not found: nothing to stamp).
func (p *Proxy) ended(c Call, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.calls) - 1; i >= 0; i-- {
		if p.calls[i].seq == c.seq {
			p.calls[i].Done = now
			return
		}
		if p.calls[i].seq < c.seq {
			return
		}
	}
}

// handle relays one call of any method: the first request is decoded,
// recorded and passed to the hook, then every frame is copied both ways
// until the upstream ends the call.
func (p *Proxy) handle(_ any, ss grpc.ServerStream) error {
	full, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return status.Error(codes.Internal, "criproxy: no method in the stream")
	}
	service, method, md := splitMethod(full)
	if md == nil {
		return status.Errorf(codes.Unimplemented, "criproxy: unknown method %s", full)
	}
	ctx := ss.Context()
	first := &frame{}
	if err := ss.RecvMsg(first); err != nil {
		return err
	}
	c := Call{Method: method, Service: service, Time: time.Now(), Request: decode(md.Input(), first.b)}
	a := p.record(&c)
	defer func() { p.ended(c, time.Now()) }()
	if a.delay > 0 {
		t := time.NewTimer(a.delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return status.FromContextError(ctx.Err()).Err()
		case <-t.C:
		}
	}
	if a.hook != nil {
		if err := a.hook(ctx, c); err != nil {
			return err
		}
	}
	if a.err != nil {
		return a.err
	}
	return p.forward(ctx, ss, full, md, first)
}

// forward opens the call upstream and copies frames both ways.
func (p *Proxy) forward(ctx context.Context, ss grpc.ServerStream, full string, md protoreflect.MethodDescriptor, first *frame) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if in, ok := metadata.FromIncomingContext(ctx); ok {
		ctx = metadata.NewOutgoingContext(ctx, forwardable(in))
	}
	desc := &grpc.StreamDesc{ServerStreams: md.IsStreamingServer(), ClientStreams: md.IsStreamingClient()}
	cs, err := p.upstream.NewStream(ctx, desc, full, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}
	if err := cs.SendMsg(first); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	go func() {
		// The agent's further frames (none for CRI's unary and
		// server-streaming calls), then the end of its side.
		for {
			f := &frame{}
			if err := ss.RecvMsg(f); err != nil {
				_ = cs.CloseSend()
				return
			}
			if err := cs.SendMsg(f); err != nil {
				return
			}
		}
	}()
	if h, err := cs.Header(); err == nil && len(h) > 0 {
		_ = ss.SendHeader(h)
	}
	for {
		f := &frame{}
		if err := cs.RecvMsg(f); err != nil {
			ss.SetTrailer(cs.Trailer())
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := ss.SendMsg(f); err != nil {
			return err
		}
	}
}

// splitMethod parses "/runtime.v1.RuntimeService/StopContainer"; md is
// nil for a method outside the two CRI services.
func splitMethod(full string) (service, method string, md protoreflect.MethodDescriptor) {
	s, m, ok := strings.Cut(strings.TrimPrefix(full, "/"), "/")
	if !ok || (s != RuntimeService && s != ImageService) {
		return s, m, nil
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(s))
	if err != nil {
		return s, m, nil
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return s, m, nil
	}
	return s, m, sd.Methods().ByName(protoreflect.Name(m))
}

// decode unmarshals b into a new message of type in; nil when it cannot.
func decode(in protoreflect.MessageDescriptor, b []byte) proto.Message {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(in.FullName())
	if err != nil {
		return nil
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(b, m); err != nil {
		return nil
	}
	return m
}

// forwardable drops the transport's own headers from incoming metadata.
func forwardable(in metadata.MD) metadata.MD {
	out := metadata.MD{}
	for k, v := range in {
		if strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") || k == "content-type" || k == "user-agent" {
			continue
		}
		out[k] = v
	}
	return out
}

// frame is one protobuf message as bytes.
type frame struct{ b []byte }

// rawCodec passes frames through unchanged.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("criproxy: cannot marshal %T", v)
	}
	return f.b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("criproxy: cannot unmarshal into %T", v)
	}
	f.b = append(f.b[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }
