package folders_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/labpool/labpool/node/folders"
)

func TestReadEnd(t *testing.T) {
	broken := errors.New("connection reset")
	tests := []struct {
		name    string
		in      io.Reader
		wantErr string
	}{
		{"at its end", strings.NewReader(""), ""},
		{"a JSON body's newline", strings.NewReader("\n"), ""},
		{"more than asked", strings.NewReader("\nextra"), "more than was asked for"},
		{"broken before its end", iotest.ErrReader(broken), "connection reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := folders.ReadEnd(tt.in)
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("ReadEnd = %v; want %q", err, tt.wantErr)
			}
		})
	}
}
