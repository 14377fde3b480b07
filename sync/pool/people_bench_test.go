package pool_test

import (
	"testing"
	"time"

	"github.com/labpool/labpool/sync/pool"
)

// BenchmarkSecondDevice measures a person's second device from its code
// to its first act in its role (an invite, which only admins and owners
// make), over QUIC on loopback:
//
//   - add-device: the station makes the code with AddDevice, the laptop
//     joins and invites at once;
//   - member-then-role: before people, the laptop joined as a member and
//     the station made it an owner (`pool role`), which reached the laptop
//     by replication before it could invite.
func BenchmarkSecondDevice(b *testing.B) {
	for _, mode := range []string{"add-device", "member-then-role"} {
		b.Run(mode, func(b *testing.B) {
			tb := b
			station := newDevice(tb, "dgx", nil)
			if _, _, err := station.m.Create(ctxT(tb), "alice"); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				laptop := newDevice(tb, "laptop", nil)
				b.StartTimer()
				var code pool.Code
				var err error
				if mode == "add-device" {
					_, code, err = station.m.AddDevice(ctxT(tb), "", 0)
				} else {
					_, code, err = station.m.Invite(ctxT(tb), pool.RoleMember, 1, time.Hour)
				}
				if err != nil {
					b.Fatal(err)
				}
				if err := laptop.m.Join(ctxT(tb), code, station.addr(), ""); err != nil {
					b.Fatal(err)
				}
				if mode == "member-then-role" {
					if err := station.m.SetRole(ctxT(tb), laptop.id.ID.String(), pool.RoleOwner); err != nil {
						b.Fatal(err)
					}
					syncLogs(tb, station, laptop)
				}
				if _, _, err := laptop.m.Invite(ctxT(tb), pool.RoleMember, 1, time.Hour); err != nil {
					b.Fatalf("iteration %d: the laptop invites: %v", i, err)
				}
			}
		})
	}
}
