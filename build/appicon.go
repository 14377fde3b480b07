//go:build ignore

// appicon draws labpool's app icon, the header's logo (frontend/src/components/Header.svelte):
// a rounded square in the accent colour with three bars in the background colour
// (frontend/src/app.css). It writes, each size drawn at its own size:
//
//   - build/appicon.png, 1024×1024: the icon wails build packs for macOS;
//   - build/windows/icon.ico: PNG images of 256, 128, 64, 48, 32 and 16 pixels;
//   - build/linux/labpool.png, 256×256: the window's icon on Linux (GDK silently
//     drops a window icon of more than 512×512 from _NET_WM_ICON, the X property
//     a request of at most 1 MiB must carry), and the icon the desktop entry's
//     Icon=labpool names, installed as share/icons/hicolor/256x256/apps/labpool.png.
//
// From the repository root:
//
//	go run build/appicon.go
//
// The shapes are signed distance fields, antialiased analytically, so the output
// depends only on this file and Go's image/png: running it twice gives the same bytes.
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log"
	"math"
	"os"
	"path/filepath"
)

// The logo on the header's 32-unit grid: <rect x y width height rx>.
type rect struct{ x, y, w, h, r float64 }

var (
	square = rect{2, 2, 28, 28, 7}
	bars   = []rect{{8, 9, 4, 14, 1.5}, {14, 13, 4, 10, 1.5}, {20, 6, 4, 17, 1.5}}
	accent = color.NRGBA{0x6e, 0xa8, 0xff, 0xff} // --accent
	ink    = color.NRGBA{0x0d, 0x10, 0x16, 0xff} // --bg
)

var icoSizes = []int{256, 128, 64, 48, 32, 16}

func main() {
	dir := flag.String("dir", "build", "the Wails build directory to write into")
	flag.Parse()
	if err := write(*dir); err != nil {
		log.Fatal(err)
	}
}

func write(dir string) error {
	icon, err := encodePNG(draw(1024))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "appicon.png"), icon, 0o644); err != nil {
		return err
	}
	linux, err := encodePNG(draw(256))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "linux", "labpool.png"), linux, 0o644); err != nil {
		return err
	}
	var images [][]byte
	for _, size := range icoSizes {
		b, err := encodePNG(draw(size))
		if err != nil {
			return err
		}
		images = append(images, b)
	}
	return os.WriteFile(filepath.Join(dir, "windows", "icon.ico"), ico(icoSizes, images), 0o644)
}

// draw renders the logo at size×size pixels on a transparent background.
func draw(size int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	scale := float64(size) / 32 // pixels per grid unit
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			// the pixel's centre, in grid units
			x, y := (float64(px)+0.5)/scale, (float64(py)+0.5)/scale
			var c [4]float64 // straight-alpha RGBA, 0..1
			c = over(c, accent, coverage(square, x, y, scale))
			for _, b := range bars {
				c = over(c, ink, coverage(b, x, y, scale))
			}
			img.SetNRGBA(px, py, toNRGBA(c))
		}
	}
	return img
}

// coverage is the part of a pixel at (x, y) that r covers, from its signed
// distance: 1 inside, 0 outside, a one-pixel ramp across the edge.
func coverage(r rect, x, y, scale float64) float64 {
	cx, cy := r.x+r.w/2, r.y+r.h/2
	qx := math.Abs(x-cx) - (r.w/2 - r.r)
	qy := math.Abs(y-cy) - (r.h/2 - r.r)
	d := math.Hypot(math.Max(qx, 0), math.Max(qy, 0)) + math.Min(math.Max(qx, qy), 0) - r.r
	return math.Min(math.Max(0.5-d*scale, 0), 1)
}

// over composites colour c with alpha a over dst (Porter-Duff "over").
func over(dst [4]float64, c color.NRGBA, a float64) [4]float64 {
	if a == 0 {
		return dst
	}
	outA := a + dst[3]*(1-a)
	var out [4]float64
	src := [3]float64{float64(c.R) / 255, float64(c.G) / 255, float64(c.B) / 255}
	for i := range src {
		out[i] = (src[i]*a + dst[i]*dst[3]*(1-a)) / outA
	}
	out[3] = outA
	return out
}

func toNRGBA(c [4]float64) color.NRGBA {
	if c[3] == 0 {
		return color.NRGBA{}
	}
	b := func(v float64) uint8 { return uint8(math.Round(v * 255)) }
	return color.NRGBA{b(c[0]), b(c[1]), b(c[2]), b(c[3])}
}

func encodePNG(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode png: %w", err)
	}
	return buf.Bytes(), nil
}

// ico packs PNG images into an ICO file (Windows Vista and later read PNG entries):
// a 6-byte header, a 16-byte directory entry per image, then the images.
func ico(sizes []int, images [][]byte) []byte {
	var buf bytes.Buffer
	le := func(v any) { binary.Write(&buf, binary.LittleEndian, v) }
	le([3]uint16{0, 1, uint16(len(images))}) // reserved, type 1 (icon), count
	offset := 6 + 16*len(images)
	for i, img := range images {
		dim := uint8(sizes[i] % 256) // 0 means 256
		le([4]uint8{dim, dim, 0, 0}) // width, height, palette size, reserved
		le([2]uint16{1, 32})         // colour planes, bits per pixel
		le([2]uint32{uint32(len(img)), uint32(offset)})
		offset += len(img)
	}
	for _, img := range images {
		buf.Write(img)
	}
	return buf.Bytes()
}
