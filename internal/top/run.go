package top

import (
	"context"
	"io"
	"net/http"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// Options are `kernelet top`'s settings.
type Options struct {
	// Base is the agent's URL (http://…, https://…, or http://kernelet
	// with a client that dials the local socket); Source how to name it.
	Base, Source string
	Client       *http.Client
	// In and Out are the terminal.
	In  io.Reader
	Out io.Writer
	// Sort is the initial order.
	Sort SortKey
}

// Run shows the view until the user quits or ctx ends.
func Run(ctx context.Context, o Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := tea.NewProgram(model{st: State{Source: o.Source, Sort: o.Sort}}, tea.WithContext(ctx), tea.WithAltScreen(),
		tea.WithInput(o.In), tea.WithOutput(o.Out))
	go Stream(ctx, o.Client, o.Base, time.Second, func(u Update) { p.Send(updateMsg(u)) })
	_, err := p.Run()
	if ctx.Err() != nil {
		return nil // ended by the caller (a signal)
	}
	return err
}
