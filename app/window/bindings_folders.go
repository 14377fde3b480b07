package window

import (
	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/folders"
)

// Folders lists every shared folder of the pool.
func (b *Bindings) Folders() ([]app.Folder, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Folders(ctx)
}

// Share shares a directory of this machine with the pool.
func (b *Bindings) Share(name, path string, readWrite bool) (app.Folder, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Share(ctx, app.ShareRequest{Name: name, Path: path, ReadWrite: readWrite})
}

// Unshare stops sharing a folder of this machine.
func (b *Bindings) Unshare(name string) error {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Unshare(ctx, name)
}

// Ls lists a directory of a shared folder.
func (b *Bindings) Ls(node, folder, path string) ([]folders.Entry, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Ls(ctx, node, folder, path)
}

// Copy starts a copy; it goes on when the window closes.
func (b *Bindings) Copy(src, dst string) (app.Transfer, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Copy(ctx, app.CopyRequest{Src: src, Dst: dst})
}

// Transfers lists the copies started through this machine.
func (b *Bindings) Transfers() ([]app.Transfer, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Transfers(ctx)
}
