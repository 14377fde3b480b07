package gpu_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/gpu"
)

// TestReadingCarriesHardwareOnly: a GPU reading and its processes name no
// holder (a job, its owner, a scheduler's job): who holds them travels
// beside the reading (agent.Sample.Holding), so no reader can take the
// holder from the hardware.
func TestReadingCarriesHardwareOnly(t *testing.T) {
	holderKeys := map[string]bool{"job": true, "owner": true, "holder": true, "member": true}
	for _, typ := range []reflect.Type{reflect.TypeFor[gpu.Stats](), reflect.TypeFor[gpu.Process]()} {
		for f := range typ.Fields() {
			key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if holderKeys[strings.ToLower(f.Name)] || holderKeys[key] {
				t.Errorf("%s.%s (json %q) names a holder in the hardware reading", typ.Name(), f.Name, key)
			}
		}
	}
}
