package folders

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"time"
	"unicode/utf8"
)

// A tree listing crosses the network as text, one item a line, so that a
// re-copy of a large unchanged tree is not spent in JSON and time parsing:
//
//	KIND SIZE MODE MTIME REL [LINK]
//
// tab-separated; KIND is f, d or l; MODE octal permission bits; MTIME Unix
// nanoseconds; REL and LINK raw, or Go-quoted when they hold a control
// character, a quote, a backslash or invalid UTF-8 (a raw name never starts
// with a quote). The last line is "E" for a complete listing, or "E", a
// tab and the quoted error that cut it short: a listing is streamed while
// the tree is read, so a failure can only be told at its end, and a stream
// without its end line is incomplete.

// WalkContentType names the listing format.
const WalkContentType = "text/x-labpool-walk; v=1"

// maxWalkLine bounds one line of a listing: two names of at most 4 KiB
// (Linux's PATH_MAX), each quoted at worst four bytes a byte, and numbers.
const maxWalkLine = 2*(4*4096+2) + 128

// EncodeWalk writes items to w as a complete listing.
func EncodeWalk(w io.Writer, items []FileMeta) error {
	enc := NewWalkEncoder(w)
	for _, it := range items {
		if err := enc.Add(it); err != nil {
			return err
		}
	}
	return enc.End(nil)
}

// WalkEncoder writes a listing item by item.
type WalkEncoder struct {
	bw   *bufio.Writer
	line []byte
}

// NewWalkEncoder returns an encoder writing to w, in writes of 64 KiB.
func NewWalkEncoder(w io.Writer) *WalkEncoder {
	return &WalkEncoder{bw: bufio.NewWriterSize(w, 64<<10)}
}

// Add writes one item.
func (e *WalkEncoder) Add(it FileMeta) error {
	e.line = appendWalkLine(e.line[:0], it)
	_, err := e.bw.Write(e.line)
	return err
}

// End writes the end line, saying err if the listing was cut short.
func (e *WalkEncoder) End(err error) error {
	if err != nil {
		e.bw.WriteString("E\t" + strconv.Quote(err.Error()) + "\n")
	} else {
		e.bw.WriteString("E\n")
	}
	return e.bw.Flush()
}

func appendWalkLine(b []byte, it FileMeta) []byte {
	kind := byte('f')
	switch {
	case it.Dir:
		kind = 'd'
	case it.Link != "":
		kind = 'l'
	}
	b = append(b, kind, '\t')
	b = strconv.AppendInt(b, it.Size, 10)
	b = append(b, '\t')
	b = strconv.AppendUint(b, uint64(it.Mode.Perm()), 8)
	b = append(b, '\t')
	b = strconv.AppendInt(b, it.MTime.UnixNano(), 10)
	b = append(b, '\t')
	b = appendName(b, it.Rel)
	if kind == 'l' {
		b = append(b, '\t')
		b = appendName(b, it.Link)
	}
	return append(b, '\n')
}

func appendName(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '"' || c == '\\' {
			return strconv.AppendQuote(b, s)
		}
	}
	if !utf8.ValidString(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

// DecodeWalk reads a listing (network input: every field is checked).
func DecodeWalk(r io.Reader) ([]FileMeta, error) {
	var out []FileMeta
	err := DecodeWalkFunc(r, func(it FileMeta) error {
		out = append(out, it)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeWalkFunc reads a listing, handing each item to emit as it is read:
// a copy starts on the first files while the rest still cross. Only a nil
// result means the listing was complete; an error from emit ends the read
// and is returned as it is.
func DecodeWalkFunc(r io.Reader, emit func(FileMeta) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("listing line %d: longer than %d bytes", n, br.Size())
		}
		if err == io.EOF && len(line) == 0 {
			return errors.New("listing cut short: no end line")
		}
		if err != nil {
			return fmt.Errorf("listing line %d: %w", n, err)
		}
		if line[0] == 'E' && (len(line) == 2 || line[1] == '\t') {
			if len(line) > 2 {
				msg, qerr := strconv.Unquote(string(line[2 : len(line)-1]))
				if qerr != nil {
					msg = "unreadable reason"
				}
				return fmt.Errorf("the source could not list its tree: %s", msg)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				return errors.New("listing: data after its end line")
			}
			return nil
		}
		it, err := parseWalkLine(line[:len(line)-1])
		if err != nil {
			return fmt.Errorf("listing line %d: %w", n, err)
		}
		if err := emit(it); err != nil {
			return err
		}
	}
}

var errWalkLine = errors.New("malformed")

func parseWalkLine(line []byte) (FileMeta, error) {
	if len(line) > maxWalkLine {
		return FileMeta{}, fmt.Errorf("%w: too long", errWalkLine)
	}
	var f [6][]byte
	k := 0
	for k < 5 {
		i := bytes.IndexByte(line, '\t')
		if i < 0 {
			break
		}
		f[k], line = line[:i], line[i+1:]
		k++
	}
	f[k] = line
	k++
	if len(f[0]) != 1 {
		return FileMeta{}, fmt.Errorf("%w: kind", errWalkLine)
	}
	kind := f[0][0]
	switch {
	case kind == 'l' && k != 6, kind != 'l' && k != 5, kind != 'f' && kind != 'd' && kind != 'l':
		return FileMeta{}, fmt.Errorf("%w: %d fields for kind %q", errWalkLine, k, kind)
	}
	size, ok := parseDecimal(f[1])
	if !ok {
		return FileMeta{}, fmt.Errorf("%w: size", errWalkLine)
	}
	mode, err := strconv.ParseUint(string(f[2]), 8, 32)
	if err != nil || mode > uint64(fs.ModePerm) {
		return FileMeta{}, fmt.Errorf("%w: mode", errWalkLine)
	}
	ns, ok := parseDecimal(f[3])
	if !ok && len(f[3]) > 1 && f[3][0] == '-' {
		ns, ok = parseDecimal(f[3][1:]) // a time before 1970
		ns = -ns
	}
	if !ok {
		return FileMeta{}, fmt.Errorf("%w: mtime", errWalkLine)
	}
	rel, err := parseName(f[4])
	if err != nil {
		return FileMeta{}, fmt.Errorf("%w: name: %v", errWalkLine, err)
	}
	it := FileMeta{Rel: rel, Size: size, Mode: fs.FileMode(mode), MTime: time.Unix(0, ns).UTC(), Dir: kind == 'd'}
	if kind == 'l' {
		if it.Link, err = parseName(f[5]); err != nil || it.Link == "" {
			return FileMeta{}, fmt.Errorf("%w: link target", errWalkLine)
		}
	}
	return it, nil
}

// parseDecimal parses a non-negative decimal int64 with no sign or spaces,
// as strconv would but without a string to allocate.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n >= 0 // 19 nines overflow
}

func parseName(b []byte) (string, error) {
	if len(b) > 0 && b[0] == '"' {
		return strconv.Unquote(string(b))
	}
	return string(b), nil
}
