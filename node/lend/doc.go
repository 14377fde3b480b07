// Package lend lends a workstation to the pool while its own user is
// away and gives it back when they sit down, after HTCondor's desktop
// policy: guests start after the owner has been away a while (15 min by
// default), inside the lend hours; when the owner comes back, no new guest
// job is placed at once, the guests are warned, and after the grace the
// owner chose they are paused or stopped.
//
// Policy is the machine's own say (kept in jobs.Policy, set only through
// the local socket). Machine is the pure state machine: it takes the
// owner-present signals and the time, and says what to do. Lender runs it
// over the signals (the owner's own GPU processes, logind's idle hint, the
// window's "I'm using it" switch) and acts through small interfaces that
// node/jobs implements.
//
// lend imports no other labpool package but node/alloc.
package lend
