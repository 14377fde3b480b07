package cli

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
)

// Every string the CLI prints may come from another machine of the pool (a
// node's name, a job's name or error, an alert's message, a folder's name,
// a refusal's message) and a malicious member writes what a terminal acts
// on: a window title, the clipboard (OSC 52), lines overwritten (CSI, \r),
// text reversed (bidi overrides). Main sends stdout and stderr through an
// escWriter, so every verb's output reaches the terminal as text: each such
// character is written as a visible escape (\x1b, \u009b, \u202e). JSON
// output stays the same JSON: the encoder escapes C0 itself, and \uXXXX
// is what JSON reads back for the rest. A job's own output (`logs`) is
// escaped on a terminal only, unless --raw.

// Escape returns s with every character a terminal would act on written as
// a visible escape: C0 controls but newline and tab as \xHH, DEL, C1
// controls, bidi controls and line separators as \uXXXX, bytes that are not
// UTF-8 as \xHH.
func Escape(s string) string { return escape(s, "\n\t") }

// field is Escape for one value of a table or line: a newline or a tab is
// escaped too, so that it forges no row or column.
func field(s string) string { return escape(s, "") }

func escape(s, keep string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n, keep) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s // the common case: nothing to escape, no copy
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		writeEscaped(&b, s[i:i+n], r, n, keep)
		i += n
	}
	return b.String()
}

// unsafeRune says whether rune r, n bytes long, is written escaped.
func unsafeRune(r rune, n int, keep string) bool {
	switch {
	case r == utf8.RuneError && n <= 1:
		return true // not UTF-8 (a raw C1 byte such as 0x9b among them)
	case r < 0x20:
		return !strings.ContainsRune(keep, r)
	case r < 0x7f:
		return false
	case r <= 0x9f: // DEL and C1
		return true
	}
	switch r {
	case 0x061c, 0x200e, 0x200f, 0x2028, 0x2029: // Arabic letter mark, LRM, RLM, line and paragraph separators
		return true
	}
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) // bidi embeddings, overrides, isolates
}

func writeEscaped(b *strings.Builder, raw string, r rune, n int, keep string) {
	switch {
	case !unsafeRune(r, n, keep):
		b.WriteString(raw)
	case r == utf8.RuneError && n <= 1, r < 0x20:
		fmt.Fprintf(b, `\x%02x`, raw[0])
	default:
		fmt.Fprintf(b, `\u%04x`, r)
	}
}

// escWriter escapes what is written to it (Escape) before w gets it; a
// character split between two writes is held until its end comes.
type escWriter struct {
	w    io.Writer
	tail []byte // the start of a character cut by the end of the last write
}

func newEscWriter(w io.Writer) *escWriter { return &escWriter{w: w} }

// Write escapes p; it reports all of p written when w takes what it got.
func (e *escWriter) Write(p []byte) (int, error) {
	buf := append(e.tail, p...)
	cut := len(buf) - partialRune(buf)
	e.tail = append([]byte(nil), buf[cut:]...)
	if cut == 0 {
		return len(p), nil
	}
	if _, err := io.WriteString(e.w, Escape(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a character still held, cut short for good, escaped.
func (e *escWriter) Flush() {
	if len(e.tail) > 0 {
		io.WriteString(e.w, Escape(string(e.tail)))
		e.tail = nil
	}
}

// partialRune is how many bytes at the end of p start a UTF-8 character
// that is not complete yet (0 to 3).
func partialRune(p []byte) int {
	for k := 1; k <= 3 && k <= len(p); k++ {
		c := p[len(p)-k]
		if c < 0x80 {
			return 0
		}
		if c >= 0xc0 { // a lead byte: cut when its character needs more than k bytes
			if !utf8.FullRune(p[len(p)-k:]) {
				return k
			}
			return 0
		}
	}
	return 0
}

// rawOut is where a verb writes what it escapes itself or must not have
// escaped (a job's output on a pipe, the codes that redraw `watch`).
func rawOut(cmd *cobra.Command) io.Writer {
	if e, ok := cmd.OutOrStdout().(*escWriter); ok {
		return e.w
	}
	return cmd.OutOrStdout()
}

// isTerminal says whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// logWriter is where a job's output goes: escaped on a terminal (tty)
// unless raw, passed through to a pipe or a file as the job wrote it.
func logWriter(w io.Writer, tty, raw bool) io.Writer {
	if tty && !raw {
		return newEscWriter(w)
	}
	return w
}

// escapeStrings escapes (field) every string that v points to, through its
// structs, slices, maps and pointers: for a frame that the CLI draws with
// its own terminal codes (`watch`), so that only the data is escaped.
func escapeStrings(v any) { escapeValue(reflect.ValueOf(v)) }

func escapeValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			escapeValue(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				escapeValue(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			escapeValue(v.Index(i))
		}
	case reflect.Map:
		escapeMap(v)
	case reflect.String:
		if v.CanSet() {
			v.SetString(field(v.String()))
		}
	}
}

// escapeMap escapes a map's values (its keys are looked up, not shown).
func escapeMap(v reflect.Value) {
	for _, k := range v.MapKeys() {
		e := reflect.New(v.Type().Elem()).Elem()
		e.Set(v.MapIndex(k))
		escapeValue(e)
		v.SetMapIndex(k, e)
	}
}
