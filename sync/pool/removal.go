package pool

import "time"

// Removal says who removed a device from the pool, and when.
type Removal struct {
	By string    // the signer's device ID (the device itself when it left)
	At time.Time // the record's version, a hybrid clock in unix ms
}

// RemovalOf returns the record that removed id from the pool (the earliest
// that took effect since its last readmission), if the log holds one: what
// a removed device is told (the record is signed, so the device checks it
// as it checks any relayed record).
func (m *Manager) RemovalOf(id string) (Removal, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.log == nil {
		return Removal{}, false
	}
	var out Removal
	found := false
	void := m.log.Superseded()
	var back uint64 // the version of its latest readmission that took effect
	for _, r := range m.log.Records() {
		if _, ok := void[r.Hash()]; !ok && r.Kind == KindReadmit && r.Subject == id {
			back = max(back, r.Version)
		}
	}
	for _, r := range m.log.Records() {
		if _, ok := void[r.Hash()]; ok {
			continue // held without effect: it removed no one
		}
		if r.Kind == KindRemove && r.Subject == id && r.Version > back {
			at := time.UnixMilli(int64(r.Version))
			if !found || at.Before(out.At) {
				out, found = Removal{By: r.Signer, At: at}, true
			}
		}
	}
	return out, found
}
