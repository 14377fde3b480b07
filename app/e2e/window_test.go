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

	"github.com/labpool/labpool/app/web"
)

// TestWindow opens the real Wails build under Xvfb. The page, in self-test
// mode, reads the rendered dashboard back from the DOM and reports it; the
// test also saves a screenshot of the screen for people to look at.
func TestWindow(t *testing.T) {
	gui := os.Getenv("LABPOOL_GUI_BIN")
	if gui == "" || testing.Short() {
		if os.Getenv("CI") == "true" && !testing.Short() {
			t.Fatal("window test: LABPOOL_GUI_BIN is not set (make test sets it)")
		}
		t.Skip("window test: set LABPOOL_GUI_BIN to a desktop build (make desktop)")
	}
	for _, tool := range []string{"Xvfb", "import"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, "window test needs "+tool)
		}
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
	cmd := exec.Command(gui)
	cmd.Env = append(os.Environ(), "DISPLAY="+display, "LABPOOL_DATA="+filepath.Join(dir, "data"),
		"LABPOOL_SELFTEST="+report, "LABPOOL_SIMULATE_GPUS=2", "LABPOOL_LISTEN=127.0.0.1:0")
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

	var data []byte
	waitFor(t, 90*time.Second, "the window's self-test report", func() error {
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
		Cards     int       `json:"cards"`
		Names     []string  `json:"names"`
		GPUMeters int       `json:"gpuMeters"`
		CPUValues []float64 `json:"cpuValues"`
		Title     string    `json:"title"`
		Text      string    `json:"text"`
		Error     string    `json:"error"`
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
	dataDir := filepath.Join(dir, "data")
	sock := filepath.Join(dataDir, "labpool.sock")
	defer func() { // never leave an agent behind
		if pid, err := os.ReadFile(filepath.Join(dataDir, "daemon.lock")); err == nil {
			exec.Command("kill", strings.TrimSpace(string(pid))).Run()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := web.NewClient(sock).Ping(ctx); err != nil {
		t.Errorf("the agent did not outlive the window: %v", err)
	}
	if out, err := exec.Command(gui, "--data", dataDir, "quit").CombinedOutput(); err != nil {
		t.Errorf("labpool quit: %v %s", err, out)
	}
	if err := web.NewClient(sock).Ping(ctx); err == nil {
		t.Errorf("the agent still answers after labpool quit")
	}
}
