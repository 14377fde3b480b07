//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/app/window"
)

// TestWindow opens the real Wails build under Xvfb, in a network namespace
// of its own (with its own dockerd when there is one). The page, in
// self-test mode, reads the rendered dashboard back from the DOM, counts the
// live events that reached it over the window's HTTP API (/api/v1/events
// through the AssetServer handler), follows a running job's log, and
// reports; the test also saves a screenshot of the screen for people to
// look at.
func TestWindow(t *testing.T) {
	gui := os.Getenv("LABPOOL_GUI_BIN")
	if gui == "" || testing.Short() {
		if os.Getenv("CI") == "true" && !testing.Short() {
			t.Fatal("window test: LABPOOL_GUI_BIN is not set (make test sets it)")
		}
		t.Skip("window test: set LABPOOL_GUI_BIN to a desktop build (make desktop)")
	}
	for _, tool := range []string{"Xvfb", "import", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, "window test needs "+tool)
		}
	}
	desk := newLAN(t, "desk").host("desk")
	// The log the page follows needs a job, and a job a container engine.
	const job = "ticker"
	withDocker := true
	if _, err := exec.LookPath("dockerd"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("window test: dockerd is not installed")
		}
		withDocker = false
		t.Log("window test: no dockerd, so no job: the page's log stream is not checked")
	} else {
		desk.docker()
	}
	display := fmt.Sprintf(":%d", 90+os.Getpid()%60)
	xvfb := exec.Command("Xvfb", display, "-screen", "0", "1280x800x24", "-nolisten", "tcp")
	if err := xvfb.Start(); err != nil {
		t.Fatalf("start Xvfb: %v", err)
	}
	defer func() { xvfb.Process.Kill(); xvfb.Wait() }()
	time.Sleep(500 * time.Millisecond)

	dir := t.TempDir()
	report := filepath.Join(dir, "selftest.json")
	dataDir := desk.data
	// nsenter, not `ip netns exec`, as for dockerd; X is reached through its
	// socket file, which the namespace shares.
	cmd := exec.Command("nsenter", "--net=/var/run/netns/"+desk.ns, gui)
	busAddr, notifications := sessionBus(t, dir)
	cmd.Env = append(append(os.Environ(), desk.env...), "DISPLAY="+display, "LABPOOL_DATA="+dataDir,
		"LABPOOL_SELFTEST="+report, "LABPOOL_SIMULATE_GPUS=2", "LABPOOL_LISTEN=127.0.0.1:0",
		"DBUS_SESSION_BUS_ADDRESS="+busAddr, "LABPOOL_SELFTEST_LINGER=20s", "LABPOOL_SELFTEST_ALERT=1")
	if withDocker {
		cmd.Env = append(cmd.Env, "LABPOOL_SELFTEST_JOB="+job)
	}
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the window: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("window log:\n%s", lastLines(logs.String(), 40))
		}
	}()
	defer func() { // never leave an agent behind
		if pid, err := os.ReadFile(filepath.Join(dataDir, "daemon.lock")); err == nil {
			exec.Command("kill", strings.TrimSpace(string(pid))).Run()
		}
	}()
	var jobID string
	if withDocker {
		desk.waitDaemon()
		out, errOut, code := desk.cli("run", "--name", job, "labpool-test/busybox:1", "sh", "-c",
			"i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.3; done")
		if code != 0 {
			t.Fatalf("labpool run: exit %d: %s%s", code, out, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		jobID = lines[len(lines)-1]
	}

	// An alert that fires while the window is open reaches the desktop as
	// a freedesktop notification (a Notify call on the session bus).
	desk.waitDaemon()
	waitFor(t, 60*time.Second, "the window's alert notifications to start", func() error {
		if !strings.Contains(logs.String(), "desktop notifications: on") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	if out, errOut, code := desk.cli("alerts", "set", "gpu-temp", "--threshold", "1", "--for", "0s"); code != 0 {
		t.Fatalf("labpool alerts set gpu-temp: exit %d: %s%s", code, out, errOut)
	}
	waitFor(t, 30*time.Second, "a desktop notification of the GPU temperature alert", func() error {
		if n := notifications(); !strings.Contains(n, "member=Notify") || !strings.Contains(n, "gpu-temp") {
			return fmt.Errorf("the session bus saw %q", lastLines(n, 12))
		}
		return nil
	})
	t.Logf("desktop notification, as the session bus saw it:\n%s", lastLines(notifications(), 14))

	var data []byte
	waitFor(t, 150*time.Second, "the window's self-test report", func() error {
		select {
		case err := <-exited:
			return fmt.Errorf("the window exited early: %v", err)
		default:
		}
		var err error
		data, err = os.ReadFile(report)
		return err
	})
	shot := filepath.Join(artifacts(t), "window.png")
	time.Sleep(time.Second) // let the last frame paint
	if out, err := exec.Command("import", "-display", display, "-window", "root", shot).CombinedOutput(); err != nil {
		t.Errorf("screenshot: %v: %s", err, out)
	} else {
		t.Logf("window screenshot: %s", shot)
	}

	var rep struct {
		Cards              int            `json:"cards"`
		Names              []string       `json:"names"`
		GPUMeters          int            `json:"gpuMeters"`
		CPUValues          []float64      `json:"cpuValues"`
		Title              string         `json:"title"`
		Text               string         `json:"text"`
		Error              string         `json:"error"`
		Kind               string         `json:"kind"`
		DaemonVersion      string         `json:"daemonVersion"`
		BrowserOpen        bool           `json:"browserOpen"`
		Events             map[string]int `json:"events"`
		AlertsCount        int            `json:"alertsCount"`
		EventsMaxPerSecond map[string]int `json:"eventsMaxPerSecond"`
		Log                *struct {
			Job    string `json:"job"`
			Chunks []struct {
				MS   int    `json:"ms"`
				Text string `json:"text"`
			} `json:"chunks"`
			Ended bool   `json:"ended"`
			Error string `json:"error"`
		} `json:"log"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("self-test report %q: %v", data, err)
	}
	t.Logf("self-test report: %s", data)
	if rep.Error != "" || rep.Cards < 1 || rep.GPUMeters != 2 || len(rep.CPUValues) < 1 {
		t.Errorf("the window rendered %d cards, %d GPU meters, CPU %v (error %q); want this machine with 2 GPUs", rep.Cards, rep.GPUMeters, rep.CPUValues, rep.Error)
	}
	if !strings.Contains(rep.Title, "labpool") {
		t.Errorf("window title %q", rep.Title)
	}
	if rep.Kind != "wails" || !rep.BrowserOpen {
		t.Errorf("the page's transport says it runs in %q (system browser reachable: %v), want the window (wails)", rep.Kind, rep.BrowserOpen)
	}
	if rep.DaemonVersion == "" || strings.HasPrefix(rep.DaemonVersion, "error") {
		t.Errorf("the page asked the daemon's version (GET /api/v1/version) and got %q", rep.DaemonVersion)
	}
	// Live events, through the window's coalesced event stream: a few per
	// second at most (one write per 200 ms).
	for _, name := range []string{app.EventSample, app.EventNodes} {
		if rep.Events[name] < 1 {
			t.Errorf("no %s event reached the window (events %v)", name, rep.Events)
		}
		if n := rep.EventsMaxPerSecond[name]; n > int(time.Second/window.DefaultConfig().Flush)+1 {
			t.Errorf("%d %s events within one second, want them coalesced", n, name)
		}
	}
	// The alert fired above reaches the page through the window's event
	// stream: the Alerts tab counts it.
	if rep.AlertsCount < 1 {
		t.Errorf("the Alerts tab counted %d active alerts (alerts events %d), want the GPU temperature alert", rep.AlertsCount, rep.Events[app.EventAlerts])
	}
	if withDocker {
		// tail 0: every piece was written after the page began to follow,
		// so two pieces at different times show the log streams live.
		if rep.Log == nil || rep.Log.Error != "" || len(rep.Log.Chunks) < 2 {
			t.Errorf("the window followed no live log of %s: %+v", job, rep.Log)
		} else if c := rep.Log.Chunks; !strings.Contains(c[0].Text, "tick") || c[1].MS <= c[0].MS {
			t.Errorf("log pieces %+v: want tick lines arriving one after the other", c)
		}
	}
	if jobID != "" {
		if _, errOut, code := desk.cli("stop", jobID); code != 0 {
			t.Errorf("labpool stop %s: %s", jobID, errOut)
		}
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the window exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("the window did not quit after its self-test")
	}
	// The window started the agent in the background: it outlives the
	// window (copies and tunnels go on), and `labpool quit` stops it.
	sock := filepath.Join(dataDir, "labpool.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := web.NewClient(sock).Ping(ctx); err != nil {
		t.Errorf("the agent did not outlive the window: %v", err)
	}
	windowAgentProgram(t, gui, dataDir)
	if out, err := exec.Command(gui, "--data", dataDir, "quit").CombinedOutput(); err != nil {
		t.Errorf("labpool quit: %v %s", err, out)
	}
	if err := web.NewClient(sock).Ping(ctx); err == nil {
		t.Errorf("the agent still answers after labpool quit")
	}
}

// sessionBus starts a private D-Bus session bus in dir and a monitor of
// freedesktop notification calls on it (nothing serves them: the monitor
// sees each call as the window sent it). It returns the bus address and
// what the monitor saw so far; both stop with the test.
func sessionBus(t *testing.T, dir string) (addr string, seen func() string) {
	t.Helper()
	for _, tool := range []string{"dbus-daemon", "dbus-monitor", "gdbus"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, "window test needs "+tool+" (Debian: dbus-daemon, dbus-bin, libglib2.0-bin)")
		}
	}
	addr = "unix:path=" + filepath.Join(dir, "bus") // a path: abstract sockets belong to a network namespace
	bus := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile", "--address="+addr)
	var busLog syncBuffer
	bus.Stdout, bus.Stderr = &busLog, &busLog
	if err := bus.Start(); err != nil {
		t.Fatalf("start dbus-daemon: %v", err)
	}
	t.Cleanup(func() { bus.Process.Kill(); bus.Wait() })
	var mon syncBuffer
	waitFor(t, 10*time.Second, "the session bus", func() error {
		_, err := os.Stat(filepath.Join(dir, "bus"))
		return err
	})
	m := exec.Command("dbus-monitor", "--address", addr, "interface=org.freedesktop.Notifications")
	m.Stdout, m.Stderr = &mon, &mon
	if err := m.Start(); err != nil {
		t.Fatalf("start dbus-monitor: %v", err)
	}
	t.Cleanup(func() { m.Process.Kill(); m.Wait() })
	waitFor(t, 10*time.Second, "the monitor on the session bus", func() error {
		if !strings.Contains(mon.String(), "NameAcquired") {
			return fmt.Errorf("monitor printed %q; bus %q", mon.String(), busLog.String())
		}
		return nil
	})
	return addr, mon.String
}

// windowAgentProgram checks that the agent the window started runs the
// headless build beside the window's binary (no GTK or WebKit loaded into
// it), where make desktop put one, and logs its RSS.
func windowAgentProgram(t *testing.T, gui, dataDir string) {
	t.Helper()
	pid, err := os.ReadFile(filepath.Join(dataDir, "daemon.lock"))
	if err != nil {
		t.Errorf("the agent's lock: %v", err)
		return
	}
	proc := filepath.Join("/proc", strings.TrimSpace(string(pid)))
	exe, err := os.Readlink(filepath.Join(proc, "exe"))
	if err != nil {
		t.Errorf("the agent's program: %v", err)
		return
	}
	status, _ := os.ReadFile(filepath.Join(proc, "status"))
	maps, _ := os.ReadFile(filepath.Join(proc, "maps"))
	gtk := strings.Contains(string(maps), "libgtk") || strings.Contains(string(maps), "libwebkit")
	rss := ""
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			rss = strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
		}
	}
	t.Logf("the window's agent: %s, RSS %s, GUI libraries loaded: %v", exe, rss, gtk)
	headless := filepath.Join(filepath.Dir(gui), "labpool-agent")
	if _, err := os.Stat(headless); err != nil {
		t.Logf("no %s (make desktop builds it): the agent runs from the window's binary", headless)
		return
	}
	if filepath.Base(exe) != "labpool-agent" || gtk {
		t.Errorf("the window's agent runs %s (GUI libraries loaded: %v); want %s", exe, gtk, headless)
	}
}
