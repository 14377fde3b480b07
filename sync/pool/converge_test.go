package pool_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/pool"
)

// actor is one device making records from its own replica, which learns
// the others' records only when it syncs: concurrent changes and forks.
type actor struct {
	name string
	l    *pool.Log
}

// TestLogConvergesProperty makes histories of concurrent owners, admins
// and members (invites, revocations, role changes, removals, admissions,
// leaving), each acting on its own replica and syncing at random, and
// delivers all their records to fresh replicas in random orders: every
// replica must hold the same records and resolve the same membership.
func TestLogConvergesProperty(t *testing.T) {
	seeds := uint64(40)
	if raceEnabled {
		seeds = 8
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			f := newFixture(t, true)
			all := f.l.Records()
			actors := []*actor{}
			for _, name := range []string{"creator", "owner2", "admin", "member", "viewer"} {
				actors = append(actors, &actor{name: name, l: f.l.Clone()})
			}
			codes := []pool.Code{f.codes[pool.RoleMember], f.codes[pool.RoleAdmin], f.codes[pool.RoleViewer]}
			newcomers := 0
			for step := range 60 {
				f.tick()
				a := actors[rng.IntN(len(actors))]
				if rng.IntN(4) == 0 { // sync with another actor
					b := actors[rng.IntN(len(actors))]
					for _, r := range b.l.Records() {
						a.l.Apply(r, f.now)
					}
					continue
				}
				r, code, ok := randomRecord(rng, f, a, actors, codes, &newcomers)
				if !ok {
					continue
				}
				if _, err := a.l.Apply(r, f.now); err != nil {
					t.Fatalf("step %d: %s's own record %s refused by its replica: %v", step, a.name, r.Kind, err)
				}
				if code != nil {
					codes = append(codes, *code)
				}
				all = append(all, r)
			}
			want := ""
			for perm := range 6 {
				recs := slices.Clone(all)
				prng := rand.New(rand.NewPCG(seed, uint64(perm)))
				prng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
				l := pool.NewLog(f.l.Pool())
				for _, r := range recs {
					if _, err := l.Apply(r, f.now); err != nil {
						t.Fatalf("order %d: %s of %.9s by %.9s refused: %v", perm, r.Kind, r.Subject, r.Signer, err)
					}
				}
				if l.Pending() != 0 {
					t.Fatalf("order %d: %d records still wait for parents", perm, l.Pending())
				}
				got := membership(l)
				if want == "" {
					want = got
					t.Logf("%d records, %d void: %s", len(l.Records()), len(l.Superseded()), got)
				} else if got != want {
					t.Fatalf("replicas diverge:\n%s\n%s", want, got)
				}
			}
		})
	}
}

// randomRecord makes a record actor a may sign from its replica, or ok=false.
func randomRecord(rng *rand.Rand, f *fixture, a *actor, actors []*actor, codes []pool.Code, newcomers *int) (pool.Record, *pool.Code, bool) {
	key := f.keys[a.name]
	members := a.l.Members()
	pick := func() pool.MemberState { return members[rng.IntN(len(members))] }
	var r pool.Record
	var err error
	switch rng.IntN(6) {
	case 0:
		roles := []pool.Role{pool.RoleViewer, pool.RoleMember, pool.RoleAdmin}
		var code pool.Code
		r, code, err = a.l.NewInvite(key, roles[rng.IntN(len(roles))], rng.IntN(3), f.now.Add(time.Hour), f.now)
		if err != nil {
			return r, nil, false
		}
		return r, &code, true
	case 1:
		invs := a.l.Invites()
		if len(invs) == 0 {
			return r, nil, false
		}
		r, err = a.l.NewRevoke(key, invs[rng.IntN(len(invs))].ID, f.now)
	case 2:
		roles := []pool.Role{pool.RoleViewer, pool.RoleMember, pool.RoleAdmin, pool.RoleOwner}
		r, err = a.l.NewRole(key, pick().ID, roles[rng.IntN(len(roles))], f.now)
	case 3:
		r, err = a.l.NewRemove(key, pick().ID, f.now)
	case 4:
		if rng.IntN(3) != 0 {
			return r, nil, false // leaving is rare
		}
		r, err = a.l.NewRemove(key, f.id(a.name), f.now)
	default:
		*newcomers++
		name := fmt.Sprintf("new%d", *newcomers)
		f.keys[name] = f.newKey(name)
		code := codes[rng.IntN(len(codes))]
		req, rerr := pool.NewJoinRequest(code, pubOf(f.keys[name]), name, "")
		if rerr != nil {
			return r, nil, false
		}
		r, err = a.l.Admit(key, req, pubOf(f.keys[name]), f.now)
	}
	return r, nil, err == nil
}

// membership is a log's resolved state as text: members with their roles.
func membership(l *pool.Log) string {
	var b strings.Builder
	for _, m := range l.Members() {
		fmt.Fprintf(&b, "%s:%s", m.Name, m.Role)
		if m.Removed {
			b.WriteString("(removed)")
		}
		b.WriteString(" ")
	}
	for _, inv := range l.Invites() {
		fmt.Fprintf(&b, "%.4s:%d/%d:%v ", inv.ID, inv.Used, inv.Uses, inv.Revoked)
	}
	return b.String()
}
