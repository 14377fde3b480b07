// Command tsgen writes frontend/src/api/types.gen.ts: the TypeScript of the
// Go types the local API carries (the request bodies and replies of every
// route of web.Routes, and a few extras), read from their JSON tags by
// reflection,
// so that the UI's types cannot drift from the Go ones (`make check` fails
// when the file differs from what this writes).
//
// Usage (from app/web, through go generate):
//
//	go run ./tsgen -o ../../frontend/src/api/types.gen.ts
package main

import (
	"flag"
	"fmt"
	"os"
	"reflect"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/lend"
	"github.com/labpool/labpool/node/reserve"
	"github.com/labpool/labpool/node/slurm"
)

// extras are the types the UI reads from elsewhere than a route's request
// or reply: events and error bodies.
var extras = []any{app.Error{}, app.Sample{}}

// names are the TypeScript names of Go types whose own names the UI does not
// use (or that would collide).
var names = map[reflect.Type]string{
	reflect.TypeFor[app.Error]():  "ErrorBody",
	reflect.TypeFor[jobs.Stats](): "JobStats",
	// A Slurm cluster's parts, apart from the pool's machines and jobs.
	reflect.TypeFor[slurm.Node]():       "ClusterNode",
	reflect.TypeFor[slurm.Partition]():  "ClusterPartition",
	reflect.TypeFor[slurm.GPUCount]():   "ClusterGPUs",
	reflect.TypeFor[slurm.QueueJob]():   "ClusterQueueJob",
	reflect.TypeFor[slurm.SubmitPlan](): "ClusterPlan",
	// A reservation as its machine keeps it, and that machine's policy of
	// them, apart from the pool's view (app.Reservation) and jobs.Policy.
	reflect.TypeFor[reserve.Reservation](): "ReservationRecord",
	reflect.TypeFor[reserve.Policy]():      "ReservePolicy",
	// A machine's lending, apart from its job policy.
	reflect.TypeFor[lend.Policy](): "LendPolicy",
	reflect.TypeFor[lend.Status](): "LendStatus",
	reflect.TypeFor[lend.State]():  "LendState",
}

// roots are the types of every route of web.Routes, then the extras.
func roots() []reflect.Type {
	var ts []reflect.Type
	for _, r := range web.Routes {
		body, reply := r.Types()
		ts = append(ts, body, reply)
	}
	for _, v := range extras {
		ts = append(ts, reflect.TypeOf(v))
	}
	return ts
}

func main() {
	out := flag.String("o", "types.gen.ts", "file to write")
	flag.Parse()
	src, err := generate()
	if err == nil {
		err = os.WriteFile(*out, []byte(src), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tsgen:", err)
		os.Exit(1)
	}
}
