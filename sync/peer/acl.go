package peer

import (
	"fmt"
	"regexp"
)

// sidPattern is a security identifier in string form ("S-1-5-21-...").
var sidPattern = regexp.MustCompile(`^S-1-[0-9]+(-[0-9]+)+$`)

// ownerOnlySDDL is the security descriptor, in Windows' SDDL, that closes a
// data directory (dir) or a file in it to everyone but the user whose SID
// is sid: a protected DACL (P: nothing inherited from above, so
// %LOCALAPPDATA%'s Administrators entry is dropped) that allows full access
// (FA) to that user and to SYSTEM (SY: the OS itself, which backups and
// antivirus run as, and which no ACL keeps out anyway). On a directory the
// entries are inherited by files (OI) and folders (CI) made in it later,
// the control socket included.
func ownerOnlySDDL(sid string, dir bool) (string, error) {
	if !sidPattern.MatchString(sid) {
		return "", fmt.Errorf("owner-only access: %q is not a security identifier", sid)
	}
	inherit := ""
	if dir {
		inherit = "OICI"
	}
	return fmt.Sprintf("D:P(A;%[1]s;FA;;;%[2]s)(A;%[1]s;FA;;;SY)", inherit, sid), nil
}
