package web

import (
	"context"
	"net/http"
	"net/url"

	"github.com/labpool/labpool/app"
)

// ClearGPU lifts the quarantine of GPU ref, "NODE:INDEX".
func (c *Client) ClearGPU(ctx context.Context, ref string) (app.GPUClear, error) {
	var out app.GPUClear
	err := c.do(ctx, http.MethodPost, "/api/v1/gpus/"+url.PathEscape(ref)+"/clear", nil, &out)
	return out, err
}
