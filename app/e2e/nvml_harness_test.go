//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/gpu/gputest"
)

// mockNVML is NVIDIA's mock libnvidia-ml.so set up for one host: the agent
// started after useMockNVML loads it with dlopen as it would load the real
// driver's library, reads the profile copied into the test's temp dir, and
// re-reads the overrides file every 200 ms.
//
//	m := h.useMockNVML("h100.yaml")
//	h.agent()
//	m.setOverrides(`devices: {"1": {thermal: {temperature_gpu_c: 88}}}`)
type mockNVML struct {
	t         testing.TB
	dir       string // LD_LIBRARY_PATH: holds libnvidia-ml.so.1, a link to the mock
	profile   string // the host's copy of the profile
	overrides string // the host's overrides file (MOCK_NVML_OVERRIDES)
}

// findMockNVML locates the mock library ($LABPOOL_TEST_NVML, or
// ../shared/mocknvml beside the module root). It skips t (fails under CI,
// which always has it) when the library is not there.
func findMockNVML(t testing.TB) gputest.Mock {
	t.Helper()
	m, err := gputest.FindMock()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err.Error())
	}
	return m
}

// useMockNVML makes h's next labpool processes run on the mock NVML library
// with a copy of the named profile (a file of the library's profiles
// directory, e.g. "h100.yaml": 8 GPUs). It drops any LABPOOL_SIMULATE_GPUS
// from h.env. Call it before h.agent() or h.web().
func (h *host) useMockNVML(profile string) *mockNVML {
	t := h.lan.t
	t.Helper()
	return h.useMockNVMLText(readMockProfile(t, profile))
}

// useMockNVMLText is useMockNVML with the profile's text given (for example
// a profile read with readMockProfile and edited).
func (h *host) useMockNVMLText(profile string) *mockNVML {
	h.lan.t.Helper()
	return h.useMockNVMLLib(findMockNVML(h.lan.t), profile)
}

// useMockNVMLLib is useMockNVMLText with the library given (an arm64
// host's, arm64_test.go).
func (h *host) useMockNVMLLib(lib gputest.Mock, profile string) *mockNVML {
	t := h.lan.t
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "nvml-"+h.name)
	dir := filepath.Join(tmp, "lib")
	if err := lib.LinkDir(dir); err != nil {
		t.Fatalf("mock NVML library: %v", err)
	}
	m := &mockNVML{t: t, dir: dir, profile: filepath.Join(tmp, "profile.yaml"),
		overrides: filepath.Join(tmp, "overrides.yaml")}
	if err := os.WriteFile(m.profile, []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	m.setOverrides("")
	env := h.env[:0:0]
	for _, e := range h.env {
		if !strings.HasPrefix(e, "LABPOOL_SIMULATE_GPUS=") && !strings.HasPrefix(e, "MOCK_NVML_") &&
			!strings.HasPrefix(e, "LD_LIBRARY_PATH=") && !strings.HasPrefix(e, "LABPOOL_GPU_REQUEST=") {
			env = append(env, e)
		}
	}
	h.env = append(env, "LD_LIBRARY_PATH="+dir, "MOCK_NVML_CONFIG="+m.profile,
		"MOCK_NVML_OVERRIDES="+m.overrides, "MOCK_NVML_OVERRIDES_TTL=200ms",
		"LABPOOL_GPU_REQUEST=env") // no NVIDIA runtime in the test's dockerd: grants go by NVIDIA_VISIBLE_DEVICES
	return m
}

// readMockProfile returns the text of one of the mock library's profiles,
// to edit before useMockNVMLText.
func readMockProfile(t testing.TB, profile string) string {
	t.Helper()
	b, err := os.ReadFile(findMockNVML(t).Profile(profile))
	if err != nil {
		t.Fatalf("mock NVML profile: %v", err)
	}
	return string(b)
}

// setOverrides replaces the overrides file atomically (a temp file renamed
// over it) with body, YAML holding `all:` and/or `devices:` blocks; the
// "version: 1" header is added. The running library sees it within its TTL
// (200 ms). An empty body removes every override.
func (m *mockNVML) setOverrides(body string) {
	m.t.Helper()
	text := "version: 1\n" + body
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	tmp := m.overrides + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		m.t.Fatalf("write mock NVML overrides: %v", err)
	}
	if err := os.Rename(tmp, m.overrides); err != nil {
		m.t.Fatalf("write mock NVML overrides: %v", err)
	}
}

// deviceOverrides returns the overrides body setting, for each GPU index,
// the YAML flow mapping given (e.g. `{thermal: {temperature_gpu_c: 88}}`).
func deviceOverrides(byIndex map[int]string) string {
	var b strings.Builder
	b.WriteString("devices:\n")
	for i := range 64 {
		if v, ok := byIndex[i]; ok {
			fmt.Fprintf(&b, "  %q: %s\n", fmt.Sprint(i), v)
		}
	}
	return b.String()
}
