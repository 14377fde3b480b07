package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/spf13/cobra"
)

func reserveCmds(g *globals) []*cobra.Command {
	return []*cobra.Command{reserveCmd(g), reservationsCmd(g), unreserveCmd(g)}
}

// reserveFlags are what `labpool reserve` reads.
type reserveFlags struct {
	gpus       int
	gpuIDs     []int
	from, span string
	member     string
	now        func() time.Time
	loc        *time.Location
}

// request turns the flags into the request the machine judges.
func (f reserveFlags) request(node string) (app.ReserveRequest, error) {
	switch {
	case f.gpus > 0 && len(f.gpuIDs) > 0:
		return app.ReserveRequest{}, usageError{fmt.Errorf("give --gpus or --gpu-ids, not both")}
	case f.gpus <= 0 && len(f.gpuIDs) == 0:
		return app.ReserveRequest{}, usageError{fmt.Errorf("say how many GPUs (--gpus N) or which (--gpu-ids 0,1)")}
	case f.from == "" || f.span == "":
		return app.ReserveRequest{}, usageError{fmt.Errorf("say when (--from \"thu 14:00\") and for how long (--for 3h)")}
	}
	from, err := parseWhen(f.from, f.now(), f.loc)
	if err != nil {
		return app.ReserveRequest{}, usageError{fmt.Errorf("--from %w", err)}
	}
	d, err := slurm.ParseTimeLimit(f.span)
	if err != nil || d <= 0 {
		return app.ReserveRequest{}, usageError{fmt.Errorf("--for %q: a length such as 3h, 90m or 1-12:00:00", f.span)}
	}
	return app.ReserveRequest{Node: node, Member: f.member, GPUs: f.gpus, GPUIDs: f.gpuIDs, From: from,
		Seconds: int64(math.Ceil(d.Seconds()))}, nil
}

func reserveCmd(g *globals) *cobra.Command {
	f := reserveFlags{now: time.Now, loc: time.Local}
	c := &cobra.Command{
		Use:   "reserve NODE --gpus N --from WHEN --for LENGTH [--member NAME]",
		Short: "Reserve GPUs of a machine for a span of time",
		Long: `Ask a machine for some of its GPUs over a span of time. The machine decides,
by its own policy (labpool policy --reserve ...), and refuses a reservation
that overlaps another, starts in the past, or is over its policy, naming the
rule. Others' jobs on the reserved GPUs are told ahead and stopped at the start.

--from takes RFC 3339, "YYYY-MM-DD HH:MM", or a weekday and a time ("thu 14:00":
the next such time), in this machine's zone. --for takes 3h, 90m or 1-12:00:00.

  labpool reserve dgx --gpus 2 --from "thu 14:00" --for 3h
  labpool reserve dgx --gpu-ids 0,1 --from "2026-03-05 09:00" --for 8h --member alice`,
		Args: cobra.ExactArgs(1),
	}
	c.Flags().IntVar(&f.gpus, "gpus", 0, "how many GPUs (any free ones)")
	c.Flags().IntSliceVar(&f.gpuIDs, "gpu-ids", nil, "these GPUs, by index")
	c.Flags().StringVar(&f.from, "from", "", `when it starts: "thu 14:00", "2026-03-05 14:00" or RFC 3339`)
	c.Flags().StringVar(&f.span, "for", "", "how long: 3h, 90m, 1-12:00:00")
	c.Flags().StringVar(&f.member, "member", "", "for another member (admins, owners and the machine's own user)")
	return actVerb(g, c, func(ctx context.Context, client *web.Client, args []string) (string, error) {
		req, err := f.request(args[0])
		if err != nil {
			return "", err
		}
		r, err := client.Reserve(ctx, req)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Reserved GPU %s of %s for %s, %s (%s)", ints(r.GPUs), r.NodeName, orShort(r.MemberName, r.Member),
			span(r.From, r.Until), r.ID), nil
	})
}

func unreserveCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "unreserve ID",
		Short: "Cancel a reservation (its member, an admin or owner, or the machine's own user)",
		Args:  cobra.ExactArgs(1),
	}
	return actVerb(g, c, func(ctx context.Context, client *web.Client, args []string) (string, error) {
		r, err := client.Unreserve(ctx, args[0])
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Cancelled %s: GPU %s of %s, %s", r.ID, ints(r.GPUs), r.NodeName, span(r.From, r.Until)), nil
	})
}

// reservationsReader is a reader that lists reservations: the daemon's
// client, or the replica.
type reservationsReader interface {
	Reservations(ctx context.Context) ([]app.Reservation, error)
}

func reservationsCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "reservations", Short: "List the reservations of the pool's machines"}
	return listVerb(g, c, func(r reader, ctx context.Context) ([]app.Reservation, error) {
		rr, ok := r.(reservationsReader)
		if !ok {
			return nil, fmt.Errorf("this reader lists no reservations")
		}
		return rr.Reservations(ctx)
	}, writeReservations)
}

func writeReservations(w io.Writer, rs []app.Reservation) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNODE\tGPUS\tFOR\tWHEN\tSTATE")
	for _, r := range rs {
		state := string(r.State)
		switch {
		case r.Problem != "":
			state = "not believed: " + r.Problem
		case r.Reason != "":
			state += ": " + r.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.NodeName, ints(r.GPUs), orShort(r.MemberName, r.Member), span(r.From, r.Until), state)
	}
	return tw.Flush()
}

func orShort(name, id string) string {
	if name != "" {
		return name
	}
	if len(id) > 9 {
		return id[:9]
	}
	return id
}

// span says a reservation's time in this machine's zone.
func span(from, until time.Time) string {
	from, until = from.Local(), until.Local()
	end := until.Format("15:04")
	if until.YearDay() != from.YearDay() || until.Year() != from.Year() {
		end = until.Format("Mon 2 Jan 15:04")
	}
	return from.Format("Mon 2 Jan 15:04") + "–" + end
}

// stopNote is the notice of a running job that the machine stops when a
// reservation of its GPUs for another member starts: " (stopped in 14m:
// its GPUs are reserved for bob from ...)", "requeued in 14m" where the
// policy puts it back into the queue, or "" for none.
func stopNote(j jobs.Job, now time.Time) string {
	if j.StopAt == nil || j.State != jobs.Running {
		return ""
	}
	left := max(j.StopAt.Sub(now), 0).Round(time.Second)
	verb, why := "stopped", strings.TrimPrefix(j.StopWhy, "stopped: ")
	if w, ok := strings.CutPrefix(j.StopWhy, "requeued: "); ok {
		verb, why = "requeued", w // the policy's --reserve-at-start requeue
	}
	return fmt.Sprintf(" (%s in %s: %s)", verb, left, why)
}
