package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// parseGPUIDs splits --gpu-ids into GPU indexes and MIG instance UUIDs
// ("MIG-..."), which may not be mixed.
func parseGPUIDs(ids []string) (indexes []int, mig []string, err error) {
	for _, id := range ids {
		id = strings.TrimSpace(id)
		if strings.HasPrefix(id, "MIG-") {
			mig = append(mig, id)
			continue
		}
		i, err := strconv.Atoi(id)
		if err != nil || i < 0 {
			return nil, nil, fmt.Errorf("--gpu-ids: %q is neither a GPU index (0, 3) nor a MIG instance UUID (MIG-...; labpool gpus lists them)", id)
		}
		indexes = append(indexes, i)
	}
	if len(indexes) > 0 && len(mig) > 0 {
		return nil, nil, fmt.Errorf("--gpu-ids: give GPU indexes or MIG instances, not both")
	}
	return indexes, mig, nil
}
