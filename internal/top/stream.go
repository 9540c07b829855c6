package top

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kernelet/kernelet/agent/live"
)

// EventsPath is the agent's live stream (agent/server/dashboard).
const EventsPath = "/dashboard/api/events"

// Update is one message of the stream: a snapshot, an event, or the
// stream's state (Err set while it is down).
type Update struct {
	Snapshot *live.Snapshot
	Event    *live.Event
	Err      error
}

// maxMessage bounds one SSE message (a snapshot of 110 pods is ~40 KiB).
const maxMessage = 8 << 20

// Stream reads the agent's event stream at base (an http(s) URL; the
// client carries the transport: unix socket, TLS, token) and hands every
// message to send until ctx ends, reconnecting every retry after an
// error (which is sent too).
func Stream(ctx context.Context, client *http.Client, base string, retry time.Duration, send func(Update)) {
	var lastID string
	for ctx.Err() == nil {
		err := streamOnce(ctx, client, base+EventsPath, &lastID, send)
		if ctx.Err() != nil {
			return
		}
		send(Update{Err: err})
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
	}
}

func streamOnce(ctx context.Context, client *http.Client, url string, lastID *string, send func(Update)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if *lastID != "" {
		req.Header.Set("Last-Event-ID", *lastID)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxMessage)
	var event, id, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if u, ok := decode(event, data); ok {
				if id != "" {
					*lastID = id
				}
				send(u)
			}
			event, id, data = "", "", ""
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "data:"):
			data = strings.TrimPrefix(line[5:], " ")
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%s: the agent closed the stream", url)
}

// decode turns one SSE message into an Update.
func decode(event, data string) (Update, bool) {
	switch event {
	case "snapshot":
		var s live.Snapshot
		if err := json.Unmarshal([]byte(data), &s); err != nil {
			return Update{Err: fmt.Errorf("snapshot: %w", err)}, true
		}
		return Update{Snapshot: &s}, true
	case "event":
		var e live.Event
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return Update{Err: fmt.Errorf("event: %w", err)}, true
		}
		return Update{Event: &e}, true
	case "error":
		var m struct{ Error string }
		_ = json.Unmarshal([]byte(data), &m)
		return Update{Err: fmt.Errorf("agent: %s", m.Error)}, true
	}
	return Update{}, false
}
