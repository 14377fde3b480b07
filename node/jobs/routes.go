package jobs

import "github.com/labpool/labpool/node/peerapi"

// Routes is the jobs API this machine serves to the pool (node/peerapi
// says how to add a call); Client calls it. Acting on a job (stop, remove,
// logs, stats, tunnels, access) is for its owner, admins and owners: the
// handler refuses others naming the rule. Who is who reaches the route.
var Routes = &peerapi.Table{}

type none = peerapi.None

// The rules the refusals of Routes name.
const (
	RuleViewerLaunch = "viewers cannot launch jobs"
	RuleClearGPU     = "only the pool's owners and this machine's user clear a quarantine"
)

// In the order TestRoundTripEveryRoute calls them: stopping and removing
// the job last.
var (
	routeSubmit   = peerapi.Add[Spec, Job](Routes, "POST", "/v1/jobs", peerapi.NonViewers, RuleViewerLaunch)
	routeList     = peerapi.Add[none, []Job](Routes, "GET", "/v1/jobs", peerapi.Members, "")
	routeGet      = peerapi.Add[none, Job](Routes, "GET", "/v1/jobs/{id}", peerapi.Members, "")
	routeLogs     = peerapi.Add[none, peerapi.Stream](Routes, "GET", "/v1/jobs/{id}/logs", peerapi.Members, "")
	routeStats    = peerapi.Add[none, Stats](Routes, "GET", "/v1/jobs/{id}/stats", peerapi.Members, "")
	routeTunnel   = peerapi.Add[peerapi.Stream, peerapi.Stream](Routes, "POST", "/v1/jobs/{id}/tunnel", peerapi.Members, "")
	routeAccess   = peerapi.Add[none, none](Routes, "GET", "/v1/jobs/{id}/access", peerapi.Members, "")
	routeClearGPU = peerapi.Add[none, Quarantine](Routes, "POST", "/v1/gpus/{index}/clear", peerapi.MachineOwners, RuleClearGPU)
	// A job's home hands it over (handover.go): the handler checks the
	// offer is the home's, as its owner proved it.
	routeHandover = peerapi.Add[Offer, OfferAnswer](Routes, "POST", "/v1/jobs/{id}/handover", peerapi.Members, "")
	routeStop     = peerapi.Add[none, Job](Routes, "POST", "/v1/jobs/{id}/stop", peerapi.Members, "")
	routeRemove   = peerapi.Add[none, none](Routes, "DELETE", "/v1/jobs/{id}", peerapi.Members, "")
)
