package cli

import "testing"

// TestDefaultDataDirPerOS: each OS's convention for a user's app data;
// root on Linux or macOS keeps the system's directory.
func TestDefaultDataDirPerOS(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		goos string
		euid int
		env  map[string]string
		home string
		want string
	}{
		{"linux", 1000, nil, "/home/ada", "/home/ada/.local/share/labpool"},
		{"linux", 1000, map[string]string{"XDG_DATA_HOME": "/data/ada"}, "/home/ada", "/data/ada/labpool"},
		{"linux", 0, nil, "/root", "/var/lib/labpool"},
		{"darwin", 501, nil, "/Users/ada", "/Users/ada/Library/Application Support/labpool"},
		{"darwin", 501, map[string]string{"XDG_DATA_HOME": "/tmp/x"}, "/Users/ada", "/Users/ada/Library/Application Support/labpool"},
		{"windows", -1, map[string]string{"LOCALAPPDATA": `C:\Users\ada\AppData\Local`}, `C:\Users\ada`, `C:\Users\ada\AppData\Local\labpool`},
		{"windows", -1, nil, `C:\Users\ada`, `C:\Users\ada\AppData\Local\labpool`},
		{"linux", 1000, nil, "", ".labpool"},
	} {
		env = tc.env
		if got := defaultDataDir(tc.goos, tc.euid, getenv, tc.home); got != tc.want {
			t.Errorf("%s euid %d env %v: %q, want %q", tc.goos, tc.euid, tc.env, got, tc.want)
		}
	}
}
