package cli

import (
	"testing"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
	"github.com/spf13/pflag"
)

// TestReserveAtStartFlag: `policy --reserve-at-start requeue` sets the
// reservation policy's AtStart, which the machine's policy accepts; a
// word it has no rule for is refused, naming the field.
func TestReserveAtStartFlag(t *testing.T) {
	for _, tt := range []struct {
		arg string
		ok  bool
	}{{"requeue", true}, {"stop", true}, {"pause", false}} {
		var f reservePolicyFlags
		fl := pflag.NewFlagSet("policy", pflag.ContinueOnError)
		f.flags(fl)
		if err := fl.Parse([]string{"--reserve-at-start", tt.arg}); err != nil {
			t.Fatal(err)
		}
		var u app.PolicyUpdate
		if err := f.apply(fl, &u); err != nil || u.ReserveAtStart == nil || *u.ReserveAtStart != tt.arg {
			t.Fatalf("--reserve-at-start %s: %+v, %v", tt.arg, u, err)
		}
		p := u.Apply(jobs.DefaultPolicy())
		if err := p.Check(); (err == nil) != tt.ok {
			t.Errorf("--reserve-at-start %s: policy check %v; want ok %v", tt.arg, err, tt.ok)
		}
	}
}
