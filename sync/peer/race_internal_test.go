package peer

import "testing"

// TestLoadFinishedByAnotherBetweenReads: a load that finds no key, while
// another load writes the key and then the certificate before it looks for
// the certificate, takes the other's identity; it does not call the key
// lost (CI under qemu saw "missing while cert.pem exists" from 8 loads at once).
func TestLoadFinishedByAnotherBetweenReads(t *testing.T) {
	dir := t.TempDir()
	var other *Identity
	keyMissingHook = func() {
		keyMissingHook = nil
		id, err := LoadOrCreate(dir)
		if err != nil {
			t.Fatalf("the other load: %v", err)
		}
		other = id
	}
	t.Cleanup(func() { keyMissingHook = nil })
	id, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatalf("load overtaken by another: %v", err)
	}
	if other == nil || id.ID != other.ID {
		t.Fatalf("load got %v, the other %v", id.ID, other)
	}
}
