package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/slurm"
	"github.com/spf13/cobra"
)

func watchCmd(g *globals) *cobra.Command {
	var interval time.Duration
	c := &cobra.Command{
		Use:   "watch",
		Short: "A live view of every machine and GPU of the pool (q to quit)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, done, err := open(cmd.Context(), g, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			if isTerminal(rawOut(cmd)) {
				m := watchModel{ctx: cmd.Context(), r: r, interval: interval}
				_, err := tea.NewProgram(m, tea.WithContext(cmd.Context()), tea.WithAltScreen()).Run()
				if err == tea.ErrProgramKilled && cmd.Context().Err() != nil {
					return nil
				}
				return err
			}
			return watchPlain(cmd.Context(), rawOut(cmd), r, interval)
		},
	}
	c.Flags().DurationVar(&interval, "interval", time.Second, "refresh period")
	return c
}

// watchPlain redraws the view in place with ANSI codes when stdout is not a
// terminal bubbletea can drive (a pipe into a log, a test). w gets the codes
// as they are: the nodes' strings are escaped (escapeStrings) instead.
func watchPlain(ctx context.Context, w io.Writer, r reader, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		nodes, err := r.Nodes(ctx)
		if err != nil {
			return err
		}
		escapeStrings(&nodes)
		fmt.Fprint(w, "\x1b[H\x1b[2J"+renderWatch(nodes, time.Now(), 100))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

type watchModel struct {
	ctx      context.Context
	r        reader
	interval time.Duration
	nodes    []app.Node
	err      error
	width    int
}

type nodesMsg struct {
	nodes []app.Node
	err   error
}

func (m watchModel) fetch() tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
		defer cancel()
		n, err := m.r.Nodes(ctx)
		escapeStrings(&n) // bubbletea writes the frame to the terminal as it is
		if err != nil {
			err = errors.New(field(err.Error()))
		}
		return nodesMsg{n, err}
	}
}

func (m watchModel) Init() tea.Cmd { return m.fetch() }

func (m watchModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		if s := msg.String(); s == "q" || s == "ctrl+c" || s == "esc" {
			return m, tea.Quit
		}
	case tea.WindowSizeMsg:
		m.width = msg.Width
	case nodesMsg:
		m.nodes, m.err = msg.nodes, msg.err
		return m, tea.Tick(m.interval, func(time.Time) tea.Msg { return m.fetch()() })
	}
	return m, nil
}

func (m watchModel) View() string {
	if m.err != nil {
		return renderWatch(m.nodes, time.Now(), m.width) + "\n" + warnStyle.Render("error: "+m.err.Error()) + "\n"
	}
	return renderWatch(m.nodes, time.Now(), m.width)
}

var (
	titleStyle   = lipgloss.NewStyle().Bold(true)
	onlineStyle  = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	offlineStyle = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
	warnStyle    = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
	dimStyle     = lipgloss.NewStyle().Faint(true)
)

// renderWatch draws one frame of `labpool watch`.
func renderWatch(nodes []app.Node, now time.Time, width int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s  %s   (q to quit)\n\n", titleStyle.Render("labpool watch"), now.Format(time.TimeOnly), count(len(nodes), "machine"))
	for _, n := range nodes {
		st := onlineStyle.Render("● " + state(n))
		if !n.Online {
			st = offlineStyle.Render("○ offline") + dimStyle.Render(" · last seen "+Ago(n.LastSeen, now)+" · stale")
		}
		fmt.Fprintf(&b, "%s %s  %s\n", titleStyle.Render(n.Name), dimStyle.Render(n.ShortID), st)
		if n.Host != nil {
			memPct := pct(n.Host.MemUsedBytes, n.Host.MemTotalBytes)
			fmt.Fprintf(&b, "  CPU %s %5.1f%%   RAM %s %5.1f%% %s/%s   load %.2f\n",
				bar(n.Host.CPUPercent, 12), n.Host.CPUPercent, bar(memPct, 12), memPct,
				Bytes(n.Host.MemUsedBytes), Bytes(n.Host.MemTotalBytes), n.Host.Load1)
		}
		if n.Cluster != nil {
			b.WriteString(watchCluster(n))
			b.WriteString("\n")
			continue
		}
		if len(n.GPUs) == 0 {
			msg := "no GPUs"
			if n.GPUError != "" {
				msg = n.GPUError
			}
			fmt.Fprintf(&b, "  %s\n", dimStyle.Render(msg))
		}
		for _, g := range n.GPUs {
			fmt.Fprintf(&b, "  GPU%-2d %s %5.1f%%  mem %s  %3.0f°C  %4.0f/%.0f W  %s  %s  %s\n", g.Index,
				bar(g.UtilPercent, 12), g.UtilPercent, gpuMemory(g),
				g.TempC, g.PowerW, g.PowerLimitW, watchHealth(g), watchJob(g), dimStyle.Render(g.Name))
		}
		b.WriteString("\n")
	}
	_ = width
	return b.String()
}

// watchHealth is a GPU's health as watch shows it: ok plain, anything
// else coloured with its reason.
func watchHealth(g app.GPU) string {
	switch g.Health {
	case "", "ok":
		return onlineStyle.Render(orDash(g.Health))
	case "warning":
		return warnStyle.Render(health(g.Health, g.HealthReason))
	}
	return offlineStyle.Render(health(g.Health, g.HealthReason))
}

// watchJob is the job on a GPU, by name and owner, or that it is free.
func watchJob(g app.GPU) string {
	switch {
	case g.Job == "" && g.Holder != "":
		return g.Holder // a Slurm job labpool did not launch
	case g.Job == "":
		return dimStyle.Render("free")
	}
	return "job " + jobLabel(g)
}

func pct(used, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(used) / float64(total)
}

// watchCluster is a Slurm cluster's lines in watch: its GPUs by type, each
// node's state and GPUs, and its queue's counts.
func watchCluster(n app.Node) string {
	c := n.Cluster
	var b strings.Builder
	fmt.Fprintf(&b, "  Slurm %s  GPUs %s  (%d free)  queue %d running, %d pending\n", c.Name, gpuCounts(c.GPUs),
		slurm.FreeGPUs(*c), c.Running, c.Pending)
	for _, cn := range c.Nodes {
		st := cn.State
		switch {
		case !slurm.TakesJobs(cn.State):
			st = offlineStyle.Render(st)
		default:
			st = onlineStyle.Render(st)
		}
		fmt.Fprintf(&b, "  %-12s %s  %s\n", cn.Name, st, gpuCounts(cn.GPUs))
	}
	if c.Error != "" {
		fmt.Fprintf(&b, "  %s\n", warnStyle.Render("last read failed: "+c.Error))
	}
	return b.String()
}
