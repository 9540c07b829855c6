package pleg

import "github.com/go-logr/logr"

// quietErrors returns a logger whose Error calls are written as Info at the
// given verbosity, with the error as "err": for a library that reports as an
// error what is, for this caller, an expected outcome.
func quietErrors(l logr.Logger, level int) logr.Logger {
	if l.GetSink() == nil {
		return l
	}
	return logr.New(errorsAsInfo{LogSink: l.GetSink(), level: level})
}

type errorsAsInfo struct {
	logr.LogSink
	level int
}

func (e errorsAsInfo) Error(err error, msg string, kv ...any) {
	if e.Enabled(e.level) {
		e.Info(e.level, msg, append([]any{"err", err}, kv...)...)
	}
}

func (e errorsAsInfo) WithValues(kv ...any) logr.LogSink {
	return errorsAsInfo{LogSink: e.LogSink.WithValues(kv...), level: e.level}
}

func (e errorsAsInfo) WithName(name string) logr.LogSink {
	return errorsAsInfo{LogSink: e.LogSink.WithName(name), level: e.level}
}
