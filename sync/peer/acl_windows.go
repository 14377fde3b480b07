package peer

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// RestrictToOwner replaces path's DACL with ownerOnlySDDL's, for the user
// this process runs as: no one else on the machine may open the data
// directory or the control socket in it.
func RestrictToOwner(path string, dir bool) error {
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return fmt.Errorf("restrict %s to its owner: read this process's user: %w", path, err)
	}
	sddl, err := ownerOnlySDDL(user.User.Sid.String(), dir)
	if err != nil {
		return fmt.Errorf("restrict %s to its owner: %w", path, err)
	}
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return fmt.Errorf("restrict %s to its owner: parse %q: %w", path, sddl, err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return fmt.Errorf("restrict %s to its owner: %w", path, err)
	}
	// PROTECTED drops what the parent passes down; the new entries reach
	// the files already in a directory, as SetNamedSecurityInfo propagates
	// inheritable ones.
	err = windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
	if err != nil {
		return fmt.Errorf("restrict %s to its owner: %w", path, err)
	}
	return nil
}
