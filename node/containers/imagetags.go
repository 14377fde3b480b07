package containers

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"

	"github.com/distribution/reference"
)

// TagTakenError means tags of a load (or a pull) already name other images
// on this machine: they were left as they were.
type TagTakenError struct {
	Tags []string
}

func (e *TagTakenError) Error() string {
	return fmt.Sprintf("image tag %s already names another image on this machine; the machine's owner can replace it with --force",
		strings.Join(e.Tags, ", "))
}

// RefusedError is an image load refused by a rule; the message names it.
// Err, when set, is the sentinel it also is (ErrBadArchive).
type RefusedError struct {
	Rule   string
	Detail string
	Err    error
}

func (e *RefusedError) Error() string { return "refused: " + e.Detail + " (rule: " + e.Rule + ")" }

func (e *RefusedError) Unwrap() error { return e.Err }

// HTTPStatus is how the API answers a refused load (jobs.Reply).
func (e *RefusedError) HTTPStatus() (int, string) { return http.StatusBadRequest, "refused" }

// HTTPStatus is how the API answers a load whose tags are taken.
func (e *TagTakenError) HTTPStatus() (int, string) { return http.StatusConflict, "tag_taken" }

// The rules of an image load.
const (
	ruleMetaRegular = "an archive's manifest.json, index.json, repositories and oci-layout are regular files"
	ruleMetaOnce    = "an archive holds each of manifest.json, index.json, repositories and oci-layout once"
	ruleThroughLink = "no archive entry lies under a link"
	ruleTagMoved    = "a load never moves a tag that names another image"
	ruleOwnPrefix   = "a member loads images only under member/<its device ID>/; other names (Docker Hub's, a registry host's) are the machine owner's"
)

// MemberPrefix is where the images a member loads are named: "member/",
// its device ID in lowercase, "/". Docker Hub has no name of three
// components, so no pull ever fetches one, and no other member's device ID
// (proven by its certificate) gives the same prefix.
func MemberPrefix(device string) string { return "member/" + strings.ToLower(device) + "/" }

// mayName says whether a load with these rights may give an image the
// name ref: any name with AnyName; else a name under the loader's prefix,
// read as the engine reads it ("docker.io/member/x/y" is "member/x/y").
func (r Rights) mayName(ref string) bool {
	if r.AnyName {
		return true
	}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil || r.Loader == "" {
		return false
	}
	rest, ok := strings.CutPrefix(reference.FamiliarName(named), MemberPrefix(r.Loader))
	return ok && rest != ""
}

// ownPrefixRefusal refuses the tags a member may not name, saying what
// each means and the name the member may use instead.
func ownPrefixRefusal(tags []string, loader string) error {
	var says []string
	for _, t := range tags {
		named, err := reference.ParseNormalizedNamed(t)
		if err != nil {
			says = append(says, t)
			continue
		}
		named = reference.TagNameOnly(named)
		mine := MemberPrefix(loader) + strings.TrimPrefix(reference.Path(named), "library/")
		if tagged, ok := named.(reference.Tagged); ok {
			mine += ":" + tagged.Tag()
		}
		if loader == "" {
			mine = "a name under your own prefix"
		}
		says = append(says, fmt.Sprintf("%s (%s; tag it %s)", t, named.String(), mine))
	}
	return &RefusedError{Rule: ruleOwnPrefix, Detail: fmt.Sprintf(
		"a member's load must not name %s: each name means the image a registry serves under it",
		strings.Join(says, ", "))}
}

// metaFiles are the entries the engine reads an archive's images and tags
// from.
var metaFiles = map[string]bool{"manifest.json": true, "index.json": true, "repositories": true, "oci-layout": true}

// archiveRefusal is a refusal of an archive's shape.
func archiveRefusal(rule, format string, a ...any) error {
	return &RefusedError{Rule: rule, Detail: fmt.Sprintf(format, a...), Err: ErrBadArchive}
}

// entryName is where the engine would write an archive entry: cleaned,
// relative to the archive's root.
func entryName(name string) string {
	return strings.TrimPrefix(path.Clean("/"+name), "/")
}

// shape refuses an entry that would let the engine read metadata that
// untag did not see: a metadata file that is not a regular file or comes
// twice, or any entry under a link (a symlink "d" -> "." makes
// "d/manifest.json" the manifest). links and seen are the archive's links
// and metadata files so far.
func shape(hdr *tar.Header, name string, links, seen map[string]bool) error {
	for dir := path.Dir(name); dir != "." && dir != "/"; dir = path.Dir(dir) {
		if links[dir] {
			return archiveRefusal(ruleThroughLink, "entry %q lies under the link %q", hdr.Name, dir)
		}
	}
	if hdr.Typeflag == tar.TypeSymlink || hdr.Typeflag == tar.TypeLink {
		links[name] = true
	}
	if !metaFiles[name] {
		return nil
	}
	if hdr.Typeflag != tar.TypeReg {
		return archiveRefusal(ruleMetaRegular, "the archive's %s is a %s", name, kindName(hdr.Typeflag))
	}
	if seen[name] {
		return archiveRefusal(ruleMetaOnce, "the archive holds %s twice", name)
	}
	seen[name] = true
	return nil
}

func kindName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeDir:
		return "directory"
	}
	return "special file"
}

// maxMetaFile bounds an archive's manifest.json and index.json.
const maxMetaFile = 16 << 20

// archiveImage is one image of an archive: its ID and the tags it asks for.
type archiveImage struct {
	ID   string // "sha256:<hex of the config blob>"
	Tags []string
}

// untag copies a `docker save` archive from r to w without its tags: the
// RepoTags of manifest.json, the legacy "repositories" file and the image
// names of index.json. The engine then loads every image untagged, no tag
// moves while it does, and LoadImage applies the tags it may afterwards.
// It returns the images the archive's manifest.json lists. An archive
// whose metadata the engine could read other than untag does (see shape)
// is refused.
func untag(r io.Reader, w io.Writer) ([]archiveImage, error) {
	tr, tw := tar.NewReader(r), tar.NewWriter(w)
	var imgs []archiveImage
	links, seen := map[string]bool{}, map[string]bool{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadArchive, err)
		}
		name := entryName(hdr.Name)
		if err := shape(hdr, name, links, seen); err != nil {
			return nil, err
		}
		var body []byte
		switch name {
		case "repositories":
			continue
		case "manifest.json":
			if body, imgs, err = untagManifest(tr, hdr.Size); err != nil {
				return nil, err
			}
		case "index.json":
			if body, err = untagIndex(tr, hdr.Size); err != nil {
				return nil, err
			}
		}
		if body != nil {
			hdr.Size = int64(len(body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if body != nil {
			_, err = tw.Write(body)
		} else {
			_, err = io.Copy(tw, tr)
		}
		if err != nil {
			return nil, err
		}
	}
	return imgs, tw.Close()
}

func readMeta(r io.Reader, size int64, name string) ([]byte, error) {
	if size > maxMetaFile {
		return nil, fmt.Errorf("%w: its %s is %d bytes", ErrBadArchive, name, size)
	}
	b, err := io.ReadAll(io.LimitReader(r, size))
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", ErrBadArchive, name, err)
	}
	return b, nil
}

// untagManifest drops RepoTags from manifest.json, keeping every other
// field as it was.
func untagManifest(r io.Reader, size int64) ([]byte, []archiveImage, error) {
	b, err := readMeta(r, size, "manifest.json")
	if err != nil {
		return nil, nil, err
	}
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(b, &entries); err != nil {
		return nil, nil, fmt.Errorf("%w: manifest.json: %v", ErrBadArchive, err)
	}
	imgs := make([]archiveImage, 0, len(entries))
	for _, e := range entries {
		var cfg string
		var tags []string
		json.Unmarshal(e["Config"], &cfg)
		json.Unmarshal(e["RepoTags"], &tags)
		delete(e, "RepoTags")
		imgs = append(imgs, archiveImage{ID: configID(cfg), Tags: tags})
	}
	out, err := json.Marshal(entries)
	return out, imgs, err
}

// configID is the image ID that a manifest's config path names:
// "<hex>.json" (Docker before 25) or "blobs/sha256/<hex>".
func configID(cfg string) string {
	hex := strings.TrimSuffix(path.Base(cfg), ".json")
	if len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return ""
	}
	return "sha256:" + hex
}

// untagIndex drops the image names from an OCI index.json (engines with
// the containerd image store tag from them).
func untagIndex(r io.Reader, size int64) ([]byte, error) {
	b, err := readMeta(r, size, "index.json")
	if err != nil {
		return nil, err
	}
	var idx map[string]any
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("%w: index.json: %v", ErrBadArchive, err)
	}
	ms, _ := idx["manifests"].([]any)
	for _, m := range ms {
		if mm, ok := m.(map[string]any); ok {
			if ann, ok := mm["annotations"].(map[string]any); ok {
				delete(ann, "io.containerd.image.name")
				delete(ann, "org.opencontainers.image.ref.name")
			}
		}
	}
	return json.Marshal(idx)
}
