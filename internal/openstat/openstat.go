// Package openstat opens a file and reads what it is in one step: the
// start of every read that needs the file's size or type (a folder
// listing, a block read, an image upload).
package openstat

import (
	"io/fs"
	"os"
)

// Open opens name with open (os.Open, or an os.Root's Open) and stats the
// file. The caller closes f; on an error no file is left open.
func Open(open func(string) (*os.File, error), name string) (f *os.File, fi fs.FileInfo, err error) {
	f, err = open(name)
	if err != nil {
		return nil, nil, err
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}
