package app

import (
	"context"
	"fmt"

	"github.com/labpool/labpool/node/jobs"
)

// LaunchSigner signs this machine's launches with its device key
// (jobs.LaunchSigner): the daemon holds the key.
type LaunchSigner interface {
	ProveLaunch(node string, spec jobs.Spec) (string, error)
}

// launchOn asks node to run spec, with this member's proof (see
// jobs.Proof) when the service has a signer: the node names the job after
// the proof, so a launch sent again after a lost connection is the same
// job, and every reader may check who launched it.
func (s *Service) launchOn(ctx context.Context, node string, spec jobs.Spec) (jobs.Job, error) {
	var proof string
	if s.signer != nil {
		var err error
		if proof, err = s.signer.ProveLaunch(node, spec); err != nil {
			return jobs.Job{}, fmt.Errorf("sign the launch on %s: %w", shortID(node), err)
		}
	}
	j, err := jobs.Client{Conn: s.Peer(node)}.Submit(ctx, spec, proof)
	if err != nil {
		return jobs.Job{}, err
	}
	j.Node = node // the machine that answered runs it
	return j, nil
}
