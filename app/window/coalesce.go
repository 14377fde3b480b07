package window

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
)

// coalescer is the batch of the event stream: the latest event of each
// kind (of each node, for samples) since the last write, in the order of
// their first arrival.
type coalescer struct {
	mu     sync.Mutex // guards the fields below
	latest map[eventKey]json.RawMessage
	order  []eventKey // first arrival since the last take
}

type eventKey struct{ name, sub string }

func newCoalescer() *coalescer {
	return &coalescer{latest: map[eventKey]json.RawMessage{}}
}

func (c *coalescer) fill(r io.Reader, ready func()) error {
	return web.ReadSSE(r, func(name string, data json.RawMessage) {
		c.event(name, data)
		ready()
	})
}

// event keeps the daemon's event until the next take, replacing the one of
// the same kind (and node) before it.
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

// take returns the pending events as Server-Sent Events.
func (c *coalescer) take() []byte {
	c.mu.Lock()
	order, latest := c.order, c.latest
	c.order, c.latest = nil, map[eventKey]json.RawMessage{}
	c.mu.Unlock()
	var b strings.Builder
	for _, k := range order {
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", k.name, latest[k])
	}
	return []byte(b.String())
}

func (c *coalescer) close() {}
