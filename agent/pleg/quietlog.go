package pleg

import "github.com/go-logr/logr"

// quietErrors returns a logger whose Error calls are written as Info at the
// given verbosity, with the error as "err": for a library that reports as an
// error what is, for this caller, an expected outcome. Lines keep the
// caller's file and line: the wrapper's own frame is skipped when the sink
// reports callers (logr.CallDepthLogSink, as klog's and funcr's).
func quietErrors(l logr.Logger, level int) logr.Logger {
	sink := l.GetSink()
	if sink == nil {
		return l
	}
	// logr.New would Init the sink again (adding to its call depth, and
	// klog's sink is shared with l); wrapping the logger's sink keeps its
	// state, and the one extra frame of Error → Info is skipped by depth.
	return l.WithSink(errorsAsInfo{LogSink: sink, level: level})
}

type errorsAsInfo struct {
	logr.LogSink
	level int
}

func (e errorsAsInfo) Error(err error, msg string, kv ...any) {
	if e.Enabled(e.level) {
		inner := e.LogSink
		if cd, ok := inner.(logr.CallDepthLogSink); ok {
			inner = cd.WithCallDepth(1)
		}
		inner.Info(e.level, msg, append([]any{"err", err}, kv...)...)
	}
}

func (e errorsAsInfo) WithValues(kv ...any) logr.LogSink {
	return errorsAsInfo{LogSink: e.LogSink.WithValues(kv...), level: e.level}
}

func (e errorsAsInfo) WithName(name string) logr.LogSink {
	return errorsAsInfo{LogSink: e.LogSink.WithName(name), level: e.level}
}

// WithCallDepth passes a caller's extra frames on to the sink.
func (e errorsAsInfo) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := e.LogSink.(logr.CallDepthLogSink); ok {
		return errorsAsInfo{LogSink: cd.WithCallDepth(depth), level: e.level}
	}
	return e
}
