package node

import "github.com/go-logr/logr"

// leaseLogVerbosity is how far the lease controller's own log lines are
// demoted: it logs every failed attempt (every renew interval during an
// outage) where kernelet logs an outage once (Controller.failed).
const leaseLogVerbosity = 4

// demoted returns l with every line demoted by `by` verbosity levels and
// errors logged as Info lines at verbosity `by` (with an "err" value).
func demoted(l logr.Logger, by int) logr.Logger {
	sink := l.GetSink()
	if sink == nil {
		return l
	}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1) // the frame of demotedSink
	}
	return logr.New(&demotedSink{sink: sink, by: by})
}

type demotedSink struct {
	sink logr.LogSink
	by   int
}

// Init does nothing: the wrapped sink was initialized by its own logger.
func (d *demotedSink) Init(logr.RuntimeInfo) {}

func (d *demotedSink) Enabled(level int) bool { return d.sink.Enabled(level + d.by) }

func (d *demotedSink) Info(level int, msg string, kv ...any) {
	d.sink.Info(level+d.by, msg, kv...)
}

func (d *demotedSink) Error(err error, msg string, kv ...any) {
	if d.sink.Enabled(d.by) {
		d.sink.Info(d.by, msg, append(kv, "err", err)...)
	}
}

func (d *demotedSink) WithValues(kv ...any) logr.LogSink {
	return &demotedSink{sink: d.sink.WithValues(kv...), by: d.by}
}

func (d *demotedSink) WithName(name string) logr.LogSink {
	return &demotedSink{sink: d.sink.WithName(name), by: d.by}
}
