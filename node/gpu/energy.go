//go:build linux && cgo

package gpu

import (
	"math"
	"time"
)

// energyEvery is how often a GPU's total energy counter is read. The
// counter is cumulative, and costly on real hardware (about 3 ms of CPU per
// call on an H200, 96% of a whole sample): between two reads the figure
// grows by the power drawn, integrated over the samples.
const energyEvery = time.Minute

// maxPowerGap is the longest time between two power readings that is
// integrated; over a longer gap (a suspended machine, a stuck driver) the
// figure waits for the next counter read.
const maxPowerGap = 10 * time.Second

// energy is what a Sampler keeps of one GPU's energy counter.
type energy struct {
	readAt  time.Time // when the counter was last read; zero: never
	counter uint64    // mJ, as read then
	since   float64   // mJ drawn since readAt, integrated from power
	powerAt time.Time // the last power reading's time; zero: none
	powerW  float64
	shown   uint64 // the last figure given: it never goes back
	want    bool   // read the counter at the next sample (a grant began or ended)
}

// power adds a power reading taken at now: the energy since the previous
// one is the trapezoid between them.
func (e *energy) power(w float64, now time.Time) {
	if dt := now.Sub(e.powerAt); !e.powerAt.IsZero() && dt > 0 && dt <= maxPowerGap {
		e.since += (w + e.powerW) / 2 * dt.Seconds() * 1000
	}
	e.powerAt, e.powerW = now, w
}

// due reports whether the counter is to be read at now.
func (e *energy) due(now time.Time) bool {
	return e.want || e.readAt.IsZero() || now.Sub(e.readAt) >= energyEvery || now.Before(e.readAt)
}

// read records the counter, mj, read at now.
func (e *energy) read(mj uint64, now time.Time) {
	e.readAt, e.counter, e.since, e.want = now, mj, 0, false
}

// figure is the energy drawn since the driver loaded, in mJ: the last
// counter read plus the power integrated since. It never goes back: where
// the integration ran ahead of the counter, it holds until the counter
// catches up. 0 while the counter was never read.
func (e *energy) figure() uint64 {
	if e.readAt.IsZero() {
		return 0
	}
	f := e.counter + uint64(math.Round(e.since))
	e.shown = max(e.shown, f)
	return e.shown
}

// readEnergy reads the energy counter when it is due and sets s.EnergyMJ.
// A counter that answered NOT_SUPPORTED is never asked again and reads 0.
func readEnergy(r *readings, d Device, e *energy, s *Stats, now time.Time) {
	if e.due(now) {
		if mj, ok := ask(r, "energy", d.GetTotalEnergyConsumption); ok {
			e.read(mj, now)
		}
	}
	s.EnergyMJ = e.figure()
}
