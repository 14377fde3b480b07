package app

import "context"

// Version is a build of labpool as it reports itself:
// GET /api/v1/version -> Version.
type Version struct {
	Version    string `json:"version"`     // the build, e.g. "v0.4.0" or "dev"
	APIVersion int    `json:"api_version"` // of the local API and the wire protocol
}

// Version returns the build of the daemon serving r.
func (r *Reader) Version(ctx context.Context) (Version, error) {
	return Version{Version: r.self.Version, APIVersion: APIVersion}, nil
}
