package app

import (
	"os"
	"os/user"
	"runtime"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labpool/labpool/sync/pool"
)

// OSUserName is the name a person is created or joins as when none is
// given: the OS user's (the one who ran sudo, for root), cut to a name the
// pool accepts; "" when there is none, and the device's name stands.
func OSUserName() string {
	u, err := user.Current()
	if err != nil {
		return ""
	}
	return accountPerson(u.Username, u.Uid, runtime.GOOS, os.Getenv("SUDO_USER"))
}

// accountPerson is the person's name an account of name and uid stands
// for on goos: none for a system account (root but through sudo, a
// service's user such as the package's labpool, whose daemon fills in a
// name only when a request gives none), else the account's name.
func accountPerson(name, uid, goos, sudoUser string) string {
	if name == "root" {
		return PersonName(sudoUser) // root is no person: "" leaves the device's name
	}
	first := 1000 // Linux and the BSDs give people uids from 1000
	if goos == "darwin" {
		first = 500
	}
	if n, err := strconv.Atoi(uid); err == nil && goos != "windows" && n < first {
		return ""
	}
	return PersonName(name)
}

// PersonName cuts name to a person's name the pool accepts: the user part
// of DOMAIN\user, printable characters only, at most pool.MaxNameLen
// bytes, no spaces around it.
func PersonName(name string) string {
	if i := strings.LastIndexByte(name, '\\'); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, name)
	for len(name) > pool.MaxNameLen {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return strings.TrimSpace(name)
}
