package web_test

import (
	"testing"

	"github.com/labpool/labpool/app/web"
)

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:7421": true, "localhost:7421": true, "127.0.0.1:0": true, "127.0.0.3:7421": true,
		"127.0.0.2:7421": false, "[::1]:7421": false, // the tunnels' hosts (app.IsTunnelHost)
		"0.0.0.0:7421": false, ":7421": false, "[::]:7421": false, "10.0.0.1:7421": false,
		"evil.example:7421": false, "127.0.0.1": false, "192.168.1.2:80": false,
	} {
		if err := web.CheckLoopback(addr); (err == nil) != ok {
			t.Errorf("CheckLoopback(%q) = %v; want allowed=%v", addr, err, ok)
		}
	}
}
