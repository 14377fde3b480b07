package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestShowLoadProgress: a load shows the bytes the machine received (not
// what left here), says when the engine has the archive, then shows the
// engine's own steps, and prints what was loaded; a failure is returned.
func TestShowLoadProgress(t *testing.T) {
	stream := strings.Join([]string{
		`{"done":400,"total":0}`,
		`{"done":1000,"total":1000,"status":"received"}`,
		`{"done":10,"total":500,"status":"Loading layer 5f70bf18"}`,
		`{"done":500,"total":500,"status":"Loading layer 5f70bf18"}`,
		`{"done":300,"total":300,"status":"Loading layer 0a1b2c3d"}`,
		`{"status":"loaded","tags":["labpool-test/busybox:1"]}`,
	}, "\n") + "\n"
	var out, errw bytes.Buffer
	cmd := &cobra.Command{}
	cmd.SetOut(&out)
	if err := showProgress(cmd, false, strings.NewReader(stream), newLoadBars(&errw, "busybox.tar", 1000)); err != nil {
		t.Fatal(err)
	}
	e := errw.String()
	sending := strings.Index(e, "sending busybox.tar")
	engine := strings.Index(e, "its engine is loading it")
	layer1 := strings.Index(e, "Loading layer 5f70bf18")
	layer2 := strings.Index(e, "Loading layer 0a1b2c3d")
	if sending < 0 || engine < sending || layer1 < engine || layer2 < layer1 {
		t.Errorf("progress out of order (sending %d, engine %d, layers %d %d):\n%s", sending, engine, layer1, layer2, e)
	}
	if !strings.Contains(e, "100%") || strings.Count(e, "its engine is loading it") != 1 {
		t.Errorf("progress:\n%s", e)
	}
	if out.String() != "Loaded labpool-test/busybox:1\n" {
		t.Errorf("stdout %q", out.String())
	}

	out.Reset()
	if err := showProgress(cmd, true, strings.NewReader(stream), newLoadBars(&bytes.Buffer{}, "busybox.tar", 1000)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"tags": [`) {
		t.Errorf("--json stdout %q", out.String())
	}

	failed := `{"done":400,"total":0}` + "\n" + `{"error":"load image: not a docker save archive"}` + "\n"
	if err := showProgress(cmd, false, strings.NewReader(failed), newLoadBars(&bytes.Buffer{}, "x.tar", 1000)); err == nil || !strings.Contains(err.Error(), "not a docker save archive") {
		t.Errorf("failed load: %v", err)
	}
	if err := showProgress(cmd, false, strings.NewReader(`{"done":400,"total":0}`+"\n"), newLoadBars(&bytes.Buffer{}, "x.tar", 1000)); err == nil {
		t.Error("a stream cut before its end is no success")
	}
}
