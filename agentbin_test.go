package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAgentBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "labpool")
	if err := os.WriteFile(exe, []byte("gui"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, headless := agentBinary(exe); p != exe || headless {
		t.Errorf("no headless build beside it: %s, %v; want the window's own binary", p, headless)
	}
	agent := filepath.Join(dir, agentBinaryName)
	if err := os.WriteFile(agent, []byte("headless"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, headless := agentBinary(exe); p != exe || headless {
		t.Errorf("a headless build that is not executable: %s, %v; want the window's own binary", p, headless)
	}
	if err := os.Chmod(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, headless := agentBinary(exe); p != agent || !headless {
		t.Errorf("agentBinary = %s, %v; want %s, the headless build", p, headless, agent)
	}
}
