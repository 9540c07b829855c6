package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/agent/live"
)

func testServer(t *testing.T, hub *live.Hub) *httptest.Server {
	t.Helper()
	n := 0
	srv := httptest.NewServer(Handler(Config{Hub: hub, Period: 10 * time.Millisecond,
		Snapshot: func(context.Context) (live.Snapshot, error) {
			n++
			return live.Snapshot{NodeName: "node-a", Node: live.Memory{AvailableBytes: int64(n)}}, nil
		}}))
	t.Cleanup(srv.Close)
	return srv
}

func TestPageAndAssets(t *testing.T) {
	srv := testServer(t, nil)
	for path, want := range map[string]string{"/dashboard/": "<title>kernelet", "/dashboard/app.js": "EventSource", "/dashboard/style.css": ".timeline"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d, want 200 with %q", path, resp.StatusCode, want)
		}
	}
	resp, err := http.Get(srv.URL + "/dashboard")
	if err != nil || resp.Request.URL.Path != "/dashboard/" {
		t.Errorf("/dashboard did not redirect to /dashboard/: %v", err)
	}
}

// TestAssetsReferenceNoOtherOrigin: the page loads nothing from the
// network (the SVG namespace is a name, not a request).
func TestAssetsReferenceNoOtherOrigin(t *testing.T) {
	url := regexp.MustCompile(`(https?:)?//[a-zA-Z0-9.-]+\.[a-z]{2,}`)
	_ = fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := assets.ReadFile(p)
		for _, m := range url.FindAllString(string(b), -1) {
			if m != "http://www.w3.org" {
				t.Errorf("%s references %s", p, m)
			}
		}
		return nil
	})
}

func TestSnapshotJSON(t *testing.T) {
	srv := testServer(t, nil)
	resp, err := http.Get(srv.URL + SnapshotPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s live.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || s.NodeName != "node-a" {
		t.Fatalf("snapshot: %v %+v", err, s)
	}
}

type sse struct{ event, id, data string }

func readSSE(t *testing.T, r *bufio.Reader) sse {
	t.Helper()
	var m sse
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && m.event != "":
			return m
		case strings.HasPrefix(line, "event: "):
			m.event = line[7:]
		case strings.HasPrefix(line, "id: "):
			m.id = line[4:]
		case strings.HasPrefix(line, "data: "):
			m.data = line[6:]
		}
	}
}

func TestEventStream(t *testing.T) {
	hub := live.NewHub(10, nil)
	hub.Publish(live.ConditionEvent(live.ConditionChange{Type: "MemoryPressure", Status: "True"}))
	hub.Publish(live.ConditionEvent(live.ConditionChange{Type: "MemoryPressure", Status: "False"}))
	srv := testServer(t, hub)
	req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+EventsPath, nil)
	req.Header.Set("Last-Event-ID", "1") // a reconnect: event 1 was seen
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	if m := readSSE(t, r); m.event != "event" || m.id != "2" || !strings.Contains(m.data, `"status":"False"`) {
		t.Fatalf("first message %+v, want the backlog after id 1", m)
	}
	var last int64 = -1
	for range 2 { // snapshots keep coming, with new values
		m := readSSE(t, r)
		var s live.Snapshot
		if m.event != "snapshot" || json.Unmarshal([]byte(m.data), &s) != nil || s.Node.AvailableBytes == last {
			t.Fatalf("want a new snapshot, got %+v", m)
		}
		last = s.Node.AvailableBytes
	}
	hub.Publish(live.OOMKillEvent(live.OOMKill{Pod: &live.PodRef{Namespace: "ns", Name: "p"}, Container: "c", Source: "status"}))
	for {
		m := readSSE(t, r)
		if m.event == "event" {
			var e live.Event
			if err := json.Unmarshal([]byte(m.data), &e); err != nil || e.Kind != live.KindOOMKill || e.OOMKill.Container != "c" || m.id != "3" {
				t.Fatalf("event %+v (%v)", m, err)
			}
			break
		}
	}
}
