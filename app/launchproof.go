package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
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

// poolWide is spec queued pool-wide (jobs.Spec.Anywhere): the machine it
// waits on may hand it over to the first machine of the pool that fits it.
// Its environment and command line, which the owner proof does not cover,
// are bound to the signed spec by a salted digest, so that no machine it
// passes through can change what runs (jobs.PrivateDigest).
func poolWide(spec jobs.Spec) jobs.Spec {
	spec.Anywhere = true
	salt := make([]byte, 16)
	rand.Read(salt)
	spec.PrivateSalt = base64.RawURLEncoding.EncodeToString(salt)
	spec.PrivateDigest = jobs.PrivateDigest(spec.PrivateSalt, spec.Env, spec.Cmd)
	if spec.PrivateDigest == "" {
		spec.PrivateSalt = ""
	}
	return spec
}
