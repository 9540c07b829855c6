package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/kernelet/kernelet/agent/live"
)

// The paths it serves.
const (
	Prefix       = "/dashboard/"
	SnapshotPath = Prefix + "api/snapshot"
	EventsPath   = Prefix + "api/events"
)

// DefaultPeriod is how often the event stream sends a snapshot.
const DefaultPeriod = time.Second

//go:embed assets
var assets embed.FS

// Config is what the dashboard serves.
type Config struct {
	// Snapshot reads the node's and pods' memory now.
	Snapshot func(ctx context.Context) (live.Snapshot, error)
	// Hub publishes the live events (nil: none).
	Hub *live.Hub
	// Period is how often the event stream sends a snapshot (0:
	// DefaultPeriod).
	Period time.Duration
}

// Handler serves Prefix, SnapshotPath and EventsPath (mount it at Prefix
// and at "/dashboard", which redirects).
func Handler(c Config) http.Handler {
	if c.Period <= 0 {
		c.Period = DefaultPeriod
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	mux := http.NewServeMux()
	mux.Handle(Prefix, http.StripPrefix(Prefix, http.FileServer(http.FS(sub))))
	mux.Handle("/dashboard", http.RedirectHandler(Prefix, http.StatusMovedPermanently))
	mux.HandleFunc(SnapshotPath, func(w http.ResponseWriter, r *http.Request) {
		s, err := c.Snapshot(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(s)
	})
	mux.HandleFunc(EventsPath, c.serveEvents)
	return mux
}

// serveEvents is the SSE stream: "event" messages (a live.Event, id = its
// sequence number; on a reconnect the events after Last-Event-ID are sent
// again) and "snapshot" messages every period, until the client goes or
// the hub drops it for falling behind (the browser reconnects).
func (c Config) serveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	var events <-chan live.Event
	if c.Hub != nil {
		backlog, sub := c.Hub.Subscribe(0)
		defer sub.Close()
		events = sub.Events()
		last, _ := strconv.ParseUint(r.Header.Get("Last-Event-ID"), 10, 64)
		for _, e := range backlog {
			if e.Seq > last {
				if writeSSE(w, "event", strconv.FormatUint(e.Seq, 10), e) != nil {
					return
				}
			}
		}
	}
	fmt.Fprintf(w, "retry: 2000\n\n")
	t := time.NewTicker(c.Period)
	defer t.Stop()
	snapshot := true
	for {
		if snapshot {
			if c.sendSnapshot(r.Context(), w) != nil || rc.Flush() != nil {
				return
			}
			snapshot = false
		}
		select {
		case <-r.Context().Done():
			return
		case e, ok := <-events:
			if !ok {
				return // dropped: the client reconnects and catches up
			}
			if writeSSE(w, "event", strconv.FormatUint(e.Seq, 10), e) != nil || rc.Flush() != nil {
				return
			}
		case <-t.C:
			snapshot = true
		}
	}
}

func (c Config) sendSnapshot(ctx context.Context, w http.ResponseWriter) error {
	s, err := c.Snapshot(ctx)
	if err != nil {
		return writeSSE(w, "error", "", map[string]string{"error": err.Error()})
	}
	return writeSSE(w, "snapshot", "", s)
}

// writeSSE writes one message; JSON has no raw newlines, so data is one line.
func writeSSE(w http.ResponseWriter, event, id string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if id != "" {
		if _, err := fmt.Fprintf(w, "id: %s\n", id); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	return err
}
