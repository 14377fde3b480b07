package window

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/labpool/labpool/app"
)

// coalescer holds the events bound for the page between two flushes: the
// latest of each kind (of each node, for samples), and each job's log text.
type coalescer struct {
	mu     sync.Mutex // guards the fields below
	latest map[eventKey]any
	order  []eventKey // first arrival since the last flush
	logs   map[string]*logText
	jobs   []string // first arrival since the last flush
}

type eventKey struct{ name, sub string }

type logText struct {
	text strings.Builder
	eof  bool
}

func newCoalescer() *coalescer {
	return &coalescer{latest: map[eventKey]any{}, logs: map[string]*logText{}}
}

// event keeps the daemon's event until the next flush, replacing the one of
// the same kind (and node) before it. It never blocks on the page.
func (c *coalescer) event(name string, data json.RawMessage) {
	k := eventKey{name: name}
	if name == app.EventSample {
		var s struct {
			Node string `json:"node"`
		}
		json.Unmarshal(data, &s)
		k.sub = s.Node
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.latest[k]; !ok {
		c.order = append(c.order, k)
	}
	c.latest[k] = data
}

// log appends text to the job's pending chunk; eof marks the log's end.
func (c *coalescer) log(job, text string, eof bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.logs[job]
	if l == nil {
		l = &logText{}
		c.logs[job] = l
		c.jobs = append(c.jobs, job)
	}
	l.text.WriteString(text)
	l.eof = l.eof || eof
}

// flush sends what is pending to the page: one event per kind (and node),
// one log chunk per job, then the end of the logs that ended.
func (c *coalescer) flush(page Page) {
	c.mu.Lock()
	order, latest, jobs, logs := c.order, c.latest, c.jobs, c.logs
	c.order, c.latest, c.jobs, c.logs = nil, map[eventKey]any{}, nil, map[string]*logText{}
	c.mu.Unlock()
	for _, k := range order {
		page.Emit(k.name, latest[k])
	}
	for _, job := range jobs {
		l := logs[job]
		if l.text.Len() > 0 {
			page.Emit(app.EventLogs, app.LogChunk{Job: job, Text: l.text.String()})
		}
		if l.eof {
			page.Emit(app.EventLogs, app.LogChunk{Job: job, EOF: true})
		}
	}
}
