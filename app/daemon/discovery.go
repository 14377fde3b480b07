package daemon

import (
	"context"
	"log/slog"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/discovery"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/store"
)

// openDiscovery announces this node on the interfaces of Config.Ifaces,
// with the pool it is in, and gives the followers the addresses mDNS
// finds; it browses once a minute while every member is connected.
func openDiscovery(c Config, self peer.ID, name string, port int, db *store.DB, peers *replica.Peers, log *slog.Logger) *discovery.Presence {
	cfg := discovery.DefaultConfig()
	cfg.Instance = discovery.InstanceName(name, self.Short())
	cfg.Host = discovery.HostName(self.Short())
	cfg.Port = port
	cfg.Ifaces = c.Ifaces
	cfg.Quiet = peers.AllOnline
	poolID := func(ctx context.Context) (string, error) {
		id, _, err := db.Setting(ctx, app.SettingPoolID)
		return id, err
	}
	return discovery.NewPresence(cfg, discovery.TXT{ID: self.String(), APIVersion: app.APIVersion, Port: port}, poolID, peers, log)
}
