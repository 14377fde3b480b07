package window

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/app"
)

// fakeDaemon sends a burst of events every tick, and a log of many small
// writes.
type fakeDaemon struct {
	events  int           // how many of each kind Events sends
	tick    time.Duration // between two of them
	lines   int           // how many lines the log has
	lineGap time.Duration
}

func (f fakeDaemon) Events(ctx context.Context, fn func(string, json.RawMessage)) error {
	for i := range f.events {
		fn(app.EventNodes, json.RawMessage(fmt.Sprintf(`[{"n":%d}]`, i)))
		for _, node := range []string{"A", "B"} {
			fn(app.EventSample, json.RawMessage(fmt.Sprintf(`{"node":%q,"i":%d}`, node, i)))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(f.tick):
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

func (f fakeDaemon) Logs(ctx context.Context, ref string, follow bool, tail int) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() {
		for i := range f.lines {
			if _, err := fmt.Fprintf(pw, "line %d ✓\n", i); err != nil {
				return
			}
			select {
			case <-ctx.Done():
				pw.CloseWithError(ctx.Err())
				return
			case <-time.After(f.lineGap):
			}
		}
		pw.Close()
	}()
	return pr, nil
}

// recorder is a Page that keeps what it was sent, with when.
type recorder struct {
	mu     sync.Mutex // guards events
	events []sent
}

type sent struct {
	at   time.Time
	name string
	data any
}

func (r *recorder) Emit(name string, data any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, sent{time.Now(), name, data})
}
func (r *recorder) Quit()         {}
func (r *recorder) Browse(string) {}

func TestRunCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := fakeDaemon{events: 100, tick: 10 * time.Millisecond, lines: 500, lineGap: 2 * time.Millisecond}
		cfg := DefaultConfig()
		b := newBindings(src, cfg)
		page := &recorder{}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- b.Run(ctx, page) }()
		if err := b.FollowLogs("job1", 0); err != nil {
			t.Fatalf("FollowLogs: %v", err)
		}
		time.Sleep(2 * time.Second) // the events and the log end after 1 s
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		synctest.Wait()

		perSecond := int(time.Second/cfg.Flush) + 1
		count := map[string]int{}
		var log strings.Builder
		var last map[string]string
		eof := false
		for _, ev := range page.events {
			key := ev.name
			switch ev.name {
			case app.EventSample:
				var s struct{ Node string }
				json.Unmarshal(ev.data.(json.RawMessage), &s)
				key += " " + s.Node
				if last == nil {
					last = map[string]string{}
				}
				last[s.Node] = string(ev.data.(json.RawMessage))
			case app.EventLogs:
				c := ev.data.(app.LogChunk)
				if eof {
					t.Errorf("log text after its end: %+v", c)
				}
				log.WriteString(c.Text)
				eof = eof || c.EOF
				if c.EOF {
					key += " eof"
				}
			}
			if ev.at.Sub(start) < time.Second+cfg.Flush {
				count[key]++
			}
		}
		for key, n := range count {
			if n > perSecond {
				t.Errorf("%d events %q in the first second, want at most %d", n, key, perSecond)
			}
		}
		if count[app.EventNodes] < 3 {
			t.Errorf("%d %s events in the first second, want the view kept up to date", count[app.EventNodes], app.EventNodes)
		}
		for _, node := range []string{"A", "B"} {
			if want := fmt.Sprintf(`{"node":%q,"i":99}`, node); last[node] != want {
				t.Errorf("last sample of %s = %s, want %s", node, last[node], want)
			}
		}
		var want strings.Builder
		for i := range src.lines {
			fmt.Fprintf(&want, "line %d ✓\n", i)
		}
		if log.String() != want.String() || !eof {
			t.Errorf("log of %d bytes (end %v), want the %d bytes written, then its end", log.Len(), eof, want.Len())
		}
	})
}

func TestFollowLogsAfterRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBindings(fakeDaemon{}, DefaultConfig())
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := b.Run(ctx, &recorder{}); err != nil {
			t.Fatal(err)
		}
		if err := b.FollowLogs("job1", 0); err != ErrClosed {
			t.Errorf("FollowLogs after Run = %v, want ErrClosed", err)
		}
	})
}
