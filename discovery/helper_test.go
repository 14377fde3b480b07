package discovery

// The helper is this test binary run again, by "ip netns exec", inside a
// network namespace: Go cannot run one process in two namespaces. It browses,
// announces itself, and takes commands on stdin:
//
//	start NAME POOL   announce another instance ("-" for no pool)
//	set NAME POOL     change its TXT
//	stop NAME         stop announcing it
//
// It writes JSON lines to stdout: its log, with t_ns (when, in Unix
// nanoseconds), and one "found" line per Candidate. When stdin closes it
// stops everything, checks that no goroutine is left, and writes
// "helper done".

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

const (
	helperEnv      = "LABPOOL_DISCOVERY_HELPER" // the instance name: run as the helper
	helperIfaceEnv = "LABPOOL_DISCOVERY_IFACE"
	helperPort     = 4242
)

// helperID returns a device ID in canonical form derived from name.
func helperID(name string) string {
	sum := sha256.Sum256([]byte(name))
	plain := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:])
	var groups []string
	for i := 0; i < len(plain); i += 4 {
		groups = append(groups, plain[i:min(i+4, len(plain))])
	}
	return strings.Join(groups, "-")
}

func helperConfig(instance string) Config {
	cfg := DefaultConfig()
	cfg.Instance, cfg.Host, cfg.Port = instance, HostName(instance), helperPort
	cfg.Ifaces = []string{os.Getenv(helperIfaceEnv)}
	return cfg
}

func helperTXT(instance, pool string) TXT {
	if pool == "-" {
		pool = ""
	}
	return TXT{ID: helperID(instance), APIVersion: 1, Pool: pool}
}

// stampHandler adds t_ns, the record's time in Unix nanoseconds.
type stampHandler struct{ slog.Handler }

func (h stampHandler) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(slog.Int64("t_ns", r.Time.UnixNano()))
	return h.Handler.Handle(ctx, r)
}

// helperNode is what one helper process runs.
type helperNode struct {
	log *slog.Logger
	ctx context.Context
	wg  sync.WaitGroup
	ann map[string]*helperAnnouncer
}

type helperAnnouncer struct {
	a      *Announcer
	cancel context.CancelFunc
	done   chan struct{}
}

func runHelper() int {
	baseline := runtime.NumGoroutine()
	self := os.Getenv(helperEnv)
	log := slog.New(stampHandler{slog.NewJSONHandler(os.Stdout, nil)})
	ctx, cancel := context.WithCancel(context.Background())
	n := &helperNode{log: log, ctx: ctx, ann: make(map[string]*helperAnnouncer)}
	n.browse(self)
	n.start(self, "-")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		n.command(strings.Fields(sc.Text()))
	}
	for name := range n.ann {
		n.stop(name)
	}
	cancel()
	n.wg.Wait()
	left, stacks := settle(baseline, 10*time.Second)
	log.Info("helper done", "baseline", baseline, "goroutines", left, "stacks", stacks)
	return 0
}

func (n *helperNode) browse(self string) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		err := NewBrowser(helperConfig(self), n.log).Run(n.ctx, func(c Candidate) {
			addrs := make([]string, len(c.Addrs))
			for i, a := range c.Addrs {
				addrs[i] = a.String()
			}
			n.log.Info("found", "instance", c.Instance, "id", c.TXT.ID, "v", c.TXT.APIVersion,
				"port", c.TXT.Port, "pool", c.TXT.Pool, "addrs", addrs, "seen_ns", c.Seen.UnixNano())
		})
		n.log.Info("browser returned", "err", fmt.Sprint(err))
	}()
}

func (n *helperNode) command(args []string) {
	switch {
	case len(args) == 3 && args[0] == "start":
		n.start(args[1], args[2])
	case len(args) == 3 && args[0] == "set" && n.ann[args[1]] != nil:
		if err := n.ann[args[1]].a.SetTXT(helperTXT(args[1], args[2])); err != nil {
			n.log.Error("set txt", "err", err)
		}
	case len(args) == 2 && args[0] == "stop" && n.ann[args[1]] != nil:
		n.stop(args[1])
	default:
		n.log.Error("bad command", "args", args)
	}
}

func (n *helperNode) start(name, pool string) {
	ctx, cancel := context.WithCancel(n.ctx)
	h := &helperAnnouncer{a: NewAnnouncer(helperConfig(name), helperTXT(name, pool), n.log), cancel: cancel, done: make(chan struct{})}
	n.ann[name] = h
	go func() {
		defer close(h.done)
		err := h.a.Run(ctx)
		n.log.Info("announcer returned", "instance", name, "err", fmt.Sprint(err))
	}()
}

func (n *helperNode) stop(name string) {
	h := n.ann[name]
	h.cancel()
	<-h.done
	delete(n.ann, name)
}

// settle waits for the goroutine count to fall back to baseline (zeroconf's
// announcement loop ends up to 3.5 s after a registration) and returns the
// count, with all stacks if it did not.
func settle(baseline int, wait time.Duration) (int, string) {
	deadline := time.Now().Add(wait)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	n := runtime.NumGoroutine()
	if n <= baseline {
		return n, ""
	}
	buf := make([]byte, 1<<20)
	return n, string(buf[:runtime.Stack(buf, true)])
}
