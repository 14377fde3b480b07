package containers

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// TestSeccompFileIsJobProfile: the embedded profile is what jobProfile
// builds from this module's Docker default profile. Regenerate it with
// LABPOOL_UPDATE_SECCOMP=1 go test -run TestSeccompFileIsJobProfile ./node/containers.
func TestSeccompFileIsJobProfile(t *testing.T) {
	want, err := json.MarshalIndent(jobProfile(), "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if os.Getenv("LABPOOL_UPDATE_SECCOMP") == "1" {
		if err := os.WriteFile("seccomp.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("wrote seccomp.json; the next build embeds it")
		return
	}
	if !bytes.Equal(seccompFile, want) {
		t.Fatal("seccomp.json is not jobProfile's output: run LABPOOL_UPDATE_SECCOMP=1 go test -run TestSeccompFileIsJobProfile ./node/containers")
	}
}
