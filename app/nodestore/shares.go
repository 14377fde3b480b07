package nodestore

import (
	"github.com/labpool/labpool/sync/schema"

	"context"
	"encoding/json"
	"fmt"

	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/sync/store"
)

// settingFolders keeps this machine's share definitions (local only: the
// paths never leave the machine).
const settingFolders = schema.SettingFolders

// Shares implements folders.Store: share definitions in the local settings.
type Shares struct{ db *store.DB }

// NewShares returns the share store in db.
func NewShares(db *store.DB) Shares { return Shares{db} }

// LoadShares implements folders.Store.
func (s Shares) LoadShares() ([]folders.Share, error) {
	v, ok, err := s.db.Setting(context.Background(), settingFolders)
	if err != nil || !ok {
		return nil, err
	}
	var list []folders.Share
	if err := json.Unmarshal([]byte(v), &list); err != nil {
		return nil, fmt.Errorf("decode shared folders: %w", err)
	}
	return list, nil
}

// SaveShares implements folders.Store.
func (s Shares) SaveShares(list []folders.Share) error {
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	return s.db.SetSetting(context.Background(), settingFolders, string(b))
}
