package containers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/image"
)

// registryName says whether ref names an image under a registry host: its
// first path component has a '.' or a ':', or is "localhost" (Docker's own
// rule for telling a host from a Docker Hub user).
func registryName(ref string) bool {
	first, _, ok := strings.Cut(ref, "/")
	return ok && (strings.ContainsAny(first, ".:") || first == "localhost")
}

// familiar is ref as the engine lists it ("busybox:1" for
// "docker.io/library/busybox:1"); ref itself when it does not parse.
func familiar(ref string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	return reference.FamiliarString(named)
}

// guardTags runs load, one image change at a time, and then undoes what it
// must not have done, whatever path the engine took: a tag that named
// another image before is put back (unless rights.Force and load applied
// it); a new name on one of the load's images (ids; nil: on any image) is
// removed if it lies outside the loader's prefix without rights.AnyName,
// or is under a registry host and load did not apply it. Either refuses
// the load, naming the rule and the tags. Who loaded each of ids that is
// new to the engine is recorded.
func (r *Runtime) guardTags(ctx context.Context, rights Rights, load func() (tags, ids []string, err error)) ([]string, error) {
	r.imageMu.Lock()
	defer r.imageMu.Unlock()
	before, had, err := r.tagMap(ctx)
	if err != nil {
		return nil, fmt.Errorf("load image: %w", err)
	}
	tags, ids, lerr := load()
	// The checks run even when the caller went away mid-load.
	ctx = context.WithoutCancel(ctx)
	after, has, err := r.tagMap(ctx)
	if err != nil {
		return nil, fmt.Errorf("load image: check its tags: %w", err)
	}
	applied := map[string]bool{}
	for _, t := range tags {
		applied[familiar(t)] = true
	}
	moved := r.putBack(ctx, before, after, rights.Force, applied)
	squat := r.dropNewNames(ctx, before, after, ids, rights, applied)
	r.recordLoader(ids, had, has, rights.Loader)
	switch {
	case len(moved) > 0:
		return nil, &RefusedError{Rule: ruleTagMoved, Detail: fmt.Sprintf(
			"the archive moved %s; put back on the image it named before", strings.Join(moved, ", "))}
	case len(squat) > 0:
		return nil, ownPrefixRefusal(squat, rights.Loader)
	}
	return tags, lerr
}

// dropNewNames removes the names that the load made and must not have:
// on one of its images (ids; nil: any), outside the loader's prefix
// without rights.AnyName, or under a registry host but not applied by the
// load. It returns them, sorted.
func (r *Runtime) dropNewNames(ctx context.Context, before, after map[string]string, ids []string, rights Rights, applied map[string]bool) []string {
	var squat []string
	for tag, id := range after {
		if _, had := before[tag]; had || ids != nil && !slices.Contains(ids, id) {
			continue
		}
		if !rights.mayName(tag) || registryName(tag) && !applied[tag] {
			squat = append(squat, tag)
			r.untagNew(ctx, tag)
		}
	}
	slices.Sort(squat)
	return squat
}

// recordLoader records loader as who loaded each of ids that the engine
// did not have before the load (had) and has after it (has): an image
// already here keeps the loader it had, or none.
func (r *Runtime) recordLoader(ids []string, had, has map[string]bool, loader string) {
	var err error
	for _, id := range ids {
		if !had[id] && has[id] && loader != "" {
			err = cmp.Or(r.book.set(id, loader), err)
		}
	}
	if err = cmp.Or(r.book.keep(has), err); err != nil {
		// The load stands and this run knows its loader; after a restart
		// the image has none, and its loader may not remove it.
		r.log.Warn("the record of who loaded each image was not saved: after a restart the images loaded since have no known loader", "err", err)
	}
}

// putBack points every tag of before that now names another image (or
// none) at its image again, except those force let load replace, and
// returns them.
func (r *Runtime) putBack(ctx context.Context, before, after map[string]string, force bool, applied map[string]bool) []string {
	var moved []string
	for tag, was := range before {
		now := after[tag]
		if now == was || force && applied[tag] {
			continue
		}
		moved = append(moved, tag)
		tctx, cancel := r.bounded(ctx)
		r.api.ImageTag(tctx, was, tag) // best effort: the refusal names the tag either way
		cancel()
		if now != "" {
			r.dropUntagged(ctx, now)
		}
	}
	slices.Sort(moved)
	return moved
}

// untagNew removes a tag that a load must not have made, and its image
// when nothing else names it.
func (r *Runtime) untagNew(ctx context.Context, tag string) {
	rctx, cancel := r.bounded(ctx)
	defer cancel()
	r.api.ImageRemove(rctx, tag, image.RemoveOptions{PruneChildren: true}) // best effort: a container may use it
}

// tagMap is every tag of the engine and the image it names, and every
// image, tagged or not.
func (r *Runtime) tagMap(ctx context.Context) (map[string]string, map[string]bool, error) {
	lctx, cancel := r.bounded(ctx)
	defer cancel()
	sums, err := r.api.ImageList(lctx, image.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list images: %w", explain(err, ""))
	}
	out, ids := map[string]string{}, map[string]bool{}
	for _, s := range sums {
		ids[s.ID] = true
		for _, t := range s.RepoTags {
			if t != "<none>:<none>" {
				out[t] = s.ID
			}
		}
	}
	return out, ids, nil
}
