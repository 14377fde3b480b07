package peer

import "testing"

func TestOwnerOnlySDDL(t *testing.T) {
	const ada = "S-1-5-21-3623811015-3361044348-30300820-1013"
	tests := []struct {
		name, sid string
		dir       bool
		want      string
		wantErr   bool
	}{
		{"directory", ada, true, "D:P(A;OICI;FA;;;" + ada + ")(A;OICI;FA;;;SY)", false},
		{"socket", ada, false, "D:P(A;;FA;;;" + ada + ")(A;;FA;;;SY)", false},
		{"empty", "", true, "", true},
		{"an alias, not a SID", "WD", true, "", true},
		{"smuggled entry", ada + ")(A;;FA;;;WD", true, "", true},
		{"authority, no user", "S-1-5", false, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ownerOnlySDDL(tt.sid, tt.dir)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ownerOnlySDDL(%q) error = %v; want error %v", tt.sid, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ownerOnlySDDL(%q, %v) = %q; want %q", tt.sid, tt.dir, got, tt.want)
			}
		})
	}
}
