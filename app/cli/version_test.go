package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/labpool/labpool/app"
)

func TestVersionJSON(t *testing.T) {
	dir := t.TempDir()
	hooks := Hooks{Version: "v-cli"}
	code, out, _ := run(t, hooks, "--data", dir, "version", "--json")
	var got versions
	if code != ExitOK || json.Unmarshal([]byte(out), &got) != nil || got.CLI.Version != "v-cli" || got.Daemon != nil {
		t.Fatalf("version --json without a daemon: %d %q", code, out)
	}
	startDaemon(t, dir, nil)
	code, out, _ = run(t, hooks, "--data", dir, "version", "--json")
	got = versions{}
	if code != ExitOK || json.Unmarshal([]byte(out), &got) != nil || got.Daemon == nil || got.Daemon.APIVersion != app.APIVersion {
		t.Fatalf("version --json with a daemon: %d %q", code, out)
	}
	if code, out, _ := run(t, hooks, "--data", dir, "version"); code != ExitOK || !strings.Contains(out, "labpool v-cli") || !strings.Contains(out, "daemon ") {
		t.Errorf("version: %d %q", code, out)
	}
}
