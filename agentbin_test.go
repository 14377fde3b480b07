package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAgentBinaryName(t *testing.T) {
	for _, tc := range []struct{ goos, want string }{
		{"linux", "labpool-agent"},
		{"darwin", "labpool-agent"},
		{"windows", "labpool-agent.exe"},
	} {
		if got := agentBinaryName(tc.goos); got != tc.want {
			t.Errorf("agentBinaryName(%q) = %q, want %q", tc.goos, got, tc.want)
		}
	}
}

// TestAgentBinary runs each OS's rule on this machine's files: which name
// is looked for beside the window, and whether its mode bits count (Windows
// reports no execute bit: the .exe name is what makes a file a program).
func TestAgentBinary(t *testing.T) {
	for _, tc := range []struct {
		name     string
		goos     string
		file     string      // written beside the window's binary; "" for none
		mode     os.FileMode // of file
		headless bool        // want file to be the agent
	}{
		{"linux, none beside", "linux", "", 0, false},
		{"linux, not executable", "linux", "labpool-agent", 0o644, false},
		{"linux, executable", "linux", "labpool-agent", 0o755, true},
		{"linux, a directory of that name", "linux", "labpool-agent/", 0o755, false},
		{"darwin, executable", "darwin", "labpool-agent", 0o755, true},
		{"windows, none beside", "windows", "", 0, false},
		{"windows, the .exe with no execute bit", "windows", "labpool-agent.exe", 0o644, true},
		{"windows, without .exe", "windows", "labpool-agent", 0o755, false},
		{"windows, a directory of that name", "windows", "labpool-agent.exe/", 0o755, false},
		{"linux, only the Windows name", "linux", "labpool-agent.exe", 0o755, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			exe := filepath.Join(dir, "labpool")
			if err := os.WriteFile(exe, []byte("gui"), 0o755); err != nil {
				t.Fatal(err)
			}
			want := exe
			switch p := filepath.Join(dir, tc.file); {
			case tc.file == "":
			case tc.file[len(tc.file)-1] == '/':
				if err := os.Mkdir(p, tc.mode); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.WriteFile(p, []byte("headless"), tc.mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(p, tc.mode); err != nil { // past the umask
					t.Fatal(err)
				}
				if tc.headless {
					want = p
				}
			}
			p, headless := agentBinaryFor(tc.goos, exe)
			if p != want || headless != tc.headless {
				t.Errorf("agentBinaryFor(%s) = %s, %v; want %s, %v", tc.goos, p, headless, want, tc.headless)
			}
		})
	}
}
