package cli

import (
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/spf13/cobra"
)

func folderCmds(g *globals) []*cobra.Command {
	return []*cobra.Command{shareCmd(g), unshareCmd(g), foldersCmd(g), lsCmd(g), cpCmd(g)}
}

func shareCmd(g *globals) *cobra.Command {
	var rw, everyone bool
	var members, add, remove []string
	var asJSON *bool
	c := &cobra.Command{
		Use:   "share [NODE:]NAME [PATH]",
		Short: "Share a directory of this machine with the pool (read-only unless --rw); without PATH, change who may use the share NAME",
		Long: `Share a directory of this machine with the pool, read-only unless --rw, with
every member or only those --members names (member names, short IDs or
device IDs; resolved now, and refused if unknown or ambiguous).

Without PATH, change who may use the share NAME of this machine, or of
the machine NODE from any machine (the pool's owners and admins and the
folder's sharer may; NODE checks):
  labpool share data --members alice,bob
  labpool share ws-a100:datasets --add-members carol
  labpool share ws-a100:datasets --remove-members bob
  labpool share data --every-member`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				changes := 0
				for _, on := range []bool{everyone, len(members) > 0, len(add)+len(remove) > 0} {
					if on {
						changes++
					}
				}
				if rw || changes != 1 {
					return usageError{fmt.Errorf("share %s without PATH changes its members: give --members, --add-members/--remove-members or --every-member (one of them, and no --rw)", args[0])}
				}
				node, name := "", args[0]
				if n, f, ok := strings.Cut(args[0], ":"); ok {
					node, name = n, f
				}
				c, err := connect(cmd.Context(), g)
				if err != nil {
					return err
				}
				f, err := c.SetFolderMembers(cmd.Context(), app.FolderMembersRequest{Node: node, Name: name, Members: members, Add: add, Remove: remove})
				if err != nil {
					return err
				}
				return emit(cmd.OutOrStdout(), *asJSON, f, func(w io.Writer) { fmt.Fprintf(w, "%s:%s is for %s\n", f.NodeName, f.Name, whoMay(f)) })
			}
			if everyone && len(members) > 0 {
				return usageError{fmt.Errorf("--members or --every-member: not both")}
			}
			if len(add)+len(remove) > 0 || strings.Contains(args[0], ":") {
				return usageError{fmt.Errorf("share NAME PATH shares a directory of this machine: --add-members, --remove-members and NODE: change an existing share (no PATH)")}
			}
			path, err := filepath.Abs(args[1])
			if err != nil {
				return err
			}
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			f, err := c.Share(cmd.Context(), app.ShareRequest{Name: args[0], Path: path, ReadWrite: rw, Members: members})
			if err != nil {
				return err
			}
			if rw && !*asJSON {
				shareRWNote(cmd.ErrOrStderr(), path, f.Name)
			}
			return emit(cmd.OutOrStdout(), *asJSON, f, func(w io.Writer) {
				fmt.Fprintf(w, "Shared %s (%s, %s, %s) as %s:%s, for %s\n", path, f.Mode, files(f.Files), Bytes(uint64(f.SizeBytes)), f.NodeName, f.Name, whoMay(f))
			})
		},
	}
	c.Flags().BoolVar(&rw, "rw", false, "let members write")
	c.Flags().StringSliceVar(&members, "members", nil, "only these members: names, short IDs or device IDs (default: every member)")
	c.Flags().StringSliceVar(&add, "add-members", nil, "without PATH: add these members to the share's list")
	c.Flags().StringSliceVar(&remove, "remove-members", nil, "without PATH: remove these members from the share's list")
	c.Flags().BoolVar(&everyone, "every-member", false, "without PATH: let every member use the share again")
	asJSON = jsonFlag(c)
	return c
}

// whoMay says who may use a folder, by member name.
func whoMay(f app.Folder) string {
	if len(f.Members) == 0 {
		return "every member"
	}
	return strings.Join(f.MemberNames, ", ")
}

func unshareCmd(g *globals) *cobra.Command {
	var asJSON *bool
	c := &cobra.Command{
		Use:   "unshare NAME",
		Short: "Stop sharing a folder of this machine",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			if err := c.Unshare(cmd.Context(), args[0]); err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), *asJSON, actDone{"unshared " + args[0]}, func(w io.Writer) { fmt.Fprintf(w, "Stopped sharing %s.\n", args[0]) })
		},
	}
	asJSON = jsonFlag(c)
	return c
}

func foldersCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "folders", Short: "List every shared folder of the pool"}
	return listVerb(g, c, reader.Folders, writeFolders)
}

func writeFolders(w io.Writer, list []app.Folder) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FOLDER\tMODE\tSIZE\tFILES\tFOR")
	for _, f := range list {
		name := f.NodeName + ":" + f.Name
		if f.Stale {
			name += " (last known)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", name, f.Mode, Bytes(uint64(f.SizeBytes)), f.Files, whoMay(f))
	}
	return tw.Flush()
}

func lsCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "ls NODE:FOLDER[/PATH]",
		Short: "List a directory of a shared folder",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			node, folder, path, ok := app.ParseRemote(args[0])
			if !ok {
				return usageError{fmt.Errorf("%q: want NODE:FOLDER[/PATH]", args[0])}
			}
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			es, err := c.Ls(cmd.Context(), node, folder, path)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), es)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, e := range es {
				name, mode := e.Name, e.Mode.Perm()
				switch {
				case e.Dir:
					name, mode = name+"/", mode|fs.ModeDir
				case e.Link:
					mode |= fs.ModeSymlink
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", mode, strings.TrimSpace(Bytes(uint64(e.Size))), e.ModTime.Local().Format(time.DateTime), name)
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func cpCmd(g *globals) *cobra.Command {
	var quiet bool
	var asJSON *bool
	c := &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy files and trees between this machine and shared folders (NODE:FOLDER[/PATH]), or between two machines",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			t, err := c.Copy(cmd.Context(), app.CopyRequest{Src: args[0], Dst: args[1]})
			if err != nil {
				return err
			}
			var bar *copyBar
			for {
				if !quiet && t.Progress.Bytes > 0 {
					if bar == nil {
						bar = newCopyBar(cmd.ErrOrStderr(), t.Progress.Bytes)
					}
					bar.set(t.Progress.Done, time.Now())
				}
				if t.State != "running" {
					break
				}
				// The daemon answers at the copy's end, or after the wait
				// with its progress.
				if t, err = c.Transfer(cmd.Context(), t.Node, t.ID, 250*time.Millisecond); err != nil {
					return err
				}
			}
			if bar != nil {
				bar.finish(cmd.ErrOrStderr())
			}
			if t.State == "failed" {
				return fmt.Errorf("copy %s to %s: %s", args[0], args[1], t.Error)
			}
			p := t.Progress
			secs := time.Duration(0)
			if t.Finished != nil {
				secs = t.Finished.Sub(t.Started)
			}
			return emit(cmd.OutOrStdout(), *asJSON, t, func(w io.Writer) {
				fmt.Fprintf(w, "Copied %s, %s (%s sent) in %s\n", files(int(p.Files)), Bytes(uint64(p.Bytes)), Bytes(uint64(p.Sent)), secs.Round(time.Millisecond))
			})
		},
	}
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress bar")
	asJSON = jsonFlag(c)
	return c
}

// files is a count of files in words: "1 file", "3 files".
func files(n int) string { return count(n, "file") }

// count is n things in words: "1 GPU", "2 GPUs", "0 GPUs" (what is the
// singular; its plural adds an s).
func count(n int, what string) string { return plural(n, what, what+"s") }

// plural is n things in words, with the plural given: "1 person", "2 people".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
