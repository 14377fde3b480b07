package discovery

import (
	"testing"
)

func TestNetworkProfiles(t *testing.T) {
	tests := []struct {
		name, out, advice string
		wantErr           bool
	}{
		{"none", "", "", false},
		{"one private (PowerShell 5 writes numbers)", `{"Name":"lab","InterfaceAlias":"Ethernet","NetworkCategory":1}`, "", false},
		{"one public", `{"Name":"Wi-Fi 3","InterfaceAlias":"Wi-Fi","NetworkCategory":0}`,
			`Windows marks the network "Wi-Fi 3" (Wi-Fi) Public, and its firewall then blocks mDNS: ` +
				"set this network to Private in Settings → Network & internet → (the network) → Network profile type", false},
		{"names, several", "[{\"Name\":\"corp.example\",\"InterfaceAlias\":\"Ethernet\",\"NetworkCategory\":\"DomainAuthenticated\"},\r\n" +
			"{\"Name\":\"cafe\",\"InterfaceAlias\":\"Wi-Fi\",\"NetworkCategory\":\"Public\"}]\r\n",
			`Windows marks the network "cafe" (Wi-Fi) Public, and its firewall then blocks mDNS: ` +
				"set this network to Private in Settings → Network & internet → (the network) → Network profile type", false},
		{"not json", "Get-NetConnectionProfile : Access denied", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := parseProfiles([]byte(tt.out))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseProfiles(%q) error = %v; want error %v", tt.out, err, tt.wantErr)
			}
			if got := publicAdvice(ps); got != tt.advice {
				t.Errorf("publicAdvice = %q\nwant           %q", got, tt.advice)
			}
		})
	}
}
