// Package metricstest checks Prometheus text exposition with promtool, for
// the tests of node/metrics and the e2e tests that scrape an agent.
package metricstest

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// DCGMLint is what promtool's linter says of dcgm-exporter's own output,
// and so of labpool's: its counters lack _total and its label modelName is
// not snake_case. labpool keeps the names so that dashboards work.
var DCGMLint = []string{`counter metrics should have "_total" suffix`, `label names should be written in 'snake_case' not 'camelCase'`}

// Promtool runs `promtool check metrics` on text and fails t on a parse
// error or on any lint finding but DCGMLint's. It skips t when promtool is
// not installed (Debian package prometheus; CI has it).
func Promtool(t testing.TB, text string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus): the exposition is not checked by it")
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 3) { // 3: lint findings only
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && !dcgmFinding(l) {
			t.Errorf("promtool check metrics: %s", l)
		}
	}
}

func dcgmFinding(line string) bool {
	for _, d := range DCGMLint {
		if strings.HasSuffix(line, d) {
			return true
		}
	}
	return false
}
