package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/alloc"
)

// shareHolders names, for each GPU that jobs hold shares of (by UUID),
// every holder and its share, as the machine's grants record says:
// "half-a 50%, half-b 50%". A GPU's reading names one job only; a share
// of it is one of several.
func shareHolders(nodes []app.Node) map[string]string {
	held := map[string][]string{}
	for _, n := range nodes {
		if n.Alloc == nil {
			continue
		}
		for _, g := range n.Alloc.Grants {
			if g.Holder.Kind != alloc.Job || g.Share <= 0 || g.Share >= 1 {
				continue
			}
			name := g.Holder.Name
			if name == "" {
				name = shortJob(g.Holder.ID)
			}
			for _, u := range g.Units {
				held[u] = append(held[u], fmt.Sprintf("%s %.0f%%", name, 100*g.Share))
			}
		}
	}
	out := make(map[string]string, len(held))
	for u, hs := range held {
		slices.Sort(hs)
		out[u] = strings.Join(hs, ", ")
	}
	return out
}
