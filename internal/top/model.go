package top

import (
	tea "github.com/charmbracelet/bubbletea"
)

// model is the bubbletea model around State.
type model struct{ st State }

// updateMsg carries a stream Update into the program.
type updateMsg Update

func (m model) Init() tea.Cmd { return nil }

func (m model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		k := msg.String()
		if k == "q" || k == "ctrl+c" || k == "esc" {
			return m, tea.Quit
		}
		if key, ok := SortKeys[k]; ok {
			m.st.Sort = key
		}
	case tea.WindowSizeMsg:
		m.st.Width, m.st.Height = msg.Width, msg.Height
	case updateMsg:
		m.st.Apply(Update(msg))
	}
	return m, nil
}

func (m model) View() string { return View(m.st) }
