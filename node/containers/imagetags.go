package containers

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
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
// It returns the images the archive's manifest.json lists.
func untag(r io.Reader, w io.Writer) ([]archiveImage, error) {
	tr, tw := tar.NewReader(r), tar.NewWriter(w)
	var imgs []archiveImage
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadArchive, err)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		var body []byte
		switch {
		case name == "repositories" && hdr.Typeflag == tar.TypeReg:
			continue
		case name == "manifest.json" && hdr.Typeflag == tar.TypeReg:
			if body, imgs, err = untagManifest(tr, hdr.Size); err != nil {
				return nil, err
			}
		case name == "index.json" && hdr.Typeflag == tar.TypeReg:
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
