package app

import "github.com/labpool/labpool/node/jobs"

// The jobs part of the local API:
//
//	GET    /api/v1/jobs?all=1                    -> []Job (replica: every node, also offline)
//	POST   /api/v1/jobs           LaunchRequest  -> Job
//	POST   /api/v1/jobs/plan      LaunchRequest  -> Plan (where it would run, what is free)
//	GET    /api/v1/jobs/{id}                     -> Job
//	POST   /api/v1/jobs/{id}/stop                -> Job
//	DELETE /api/v1/jobs/{id}                     -> 204
//	GET    /api/v1/jobs/{id}/logs?follow=1&tail=N -> text/plain stream
//	GET    /api/v1/jobs/{id}/stats               -> jobs.Stats
//	POST   /api/v1/jobs/{id}/open  OpenRequest   -> Tunnel
//	GET    /api/v1/tunnels                       -> []Tunnel
//	GET    /api/v1/images?node=N                 -> []jobs.Image
//	POST   /api/v1/images/load?node=N  (tar body) -> NDJSON of ImageProgress
//	POST   /api/v1/images/pull  PullRequest      -> NDJSON of ImageProgress
//
// Event EventJobs carries []Job whenever a job changes (coalesced), and
// EventLogs carries LogChunk for logs followed through the window.

// Job events.
const (
	EventJobs = "jobs:changed"
	EventLogs = "job:logs"
)

// Job is a job as the UI shows it: the node's record plus names.
type Job struct {
	jobs.Job
	NodeName  string `json:"node_name"`
	OwnerName string `json:"owner_name"`
	Stale     bool   `json:"stale"` // its node is offline: the state is last known
}

// LaunchRequest asks to run a job; Node (name or ID) is optional.
type LaunchRequest struct {
	Node string    `json:"node,omitempty"`
	Spec jobs.Spec `json:"spec"`
}

// Plan says where a launch would run and what is free there.
type Plan struct {
	Node     string   `json:"node"`
	NodeName string   `json:"node_name"`
	FreeGPUs []GPU    `json:"free_gpus"`
	BusyGPUs []GPU    `json:"busy_gpus"`
	Reason   string   `json:"reason"` // why this node, or why none fits
	Fits     bool     `json:"fits"`
	Images   []string `json:"images"` // image tags on that node
}

// OpenRequest asks for a tunnel to a job's container port.
type OpenRequest struct {
	Port int `json:"port"`
}

// Tunnel is a local listener forwarding to a job's container port.
type Tunnel struct {
	Job  string `json:"job"`
	Port int    `json:"port"`
	URL  string `json:"url"` // http://127.0.0.1:LOCAL/
}

// PullRequest asks a node to pull an image from a registry it can reach.
type PullRequest struct {
	Node  string `json:"node"`
	Ref   string `json:"ref"`
	Force bool   `json:"force,omitempty"` // replace a local image of that tag (the machine's owner only)
}

// ImageProgress is one line of an image load or pull.
type ImageProgress struct {
	Done   int64    `json:"done"`
	Total  int64    `json:"total"`
	Status string   `json:"status,omitempty"`
	Error  string   `json:"error,omitempty"`
	Tags   []string `json:"tags,omitempty"` // on the last line of a load
}

// LogChunk is a piece of a followed log.
type LogChunk struct {
	Job  string `json:"job"`
	Text string `json:"text"`
	EOF  bool   `json:"eof,omitempty"`
}
