package ui

import (
	"net/url"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/vtop-dev/vtop/diagnose"
)

// Action is a user's own command on the selected endpoint or GPU, from the
// config file (k9s' plugins): a key, a name, and Run, which cmd builds to
// hand the terminal over to the command (tea.ExecProcess) and back. The UI
// only says what is selected: Run gets the values by name.
type Action struct {
	Name string
	Key  string
	Run  func(vars map[string]string) tea.Cmd
}

// ActionDone is what an action's command sends back when it ends.
type ActionDone struct {
	Name string
	Err  error
}

// Reserved reports whether key is one of vtop's own: an action cannot take it.
func Reserved(k string) bool {
	km := newKeyMap()
	for _, g := range km.helpGroups() {
		for _, b := range g.keys {
			for _, bk := range b.Keys() {
				if bk == k {
					return true
				}
			}
		}
	}
	return strings.ContainsAny(k, "0123456789.[]<>,") // the replay's keys
}

// actionVars are the values an action's command may name: the endpoint
// selected (the table's row, the endpoint shown) and its GPUs, or the GPU
// selected in the GPU pane. Unknown ones are empty.
func (m *Model) actionVars() map[string]string {
	v := map[string]string{"TARGET": "", "HOST": "", "PORT": "", "MODEL": "", "POD": "", "NAMESPACE": "", "GPU": ""}
	if m.fr == nil {
		return v
	}
	var e *diagnose.EndpointView
	switch {
	case m.mode == modeEndpoint && m.ep >= 0 && m.ep < len(m.fr.Endpoints):
		e = &m.fr.Endpoints[m.ep]
	case m.mode == modeFleet:
		if r, ok := m.fleet.selected(); ok {
			e = &m.fr.Endpoints[r.ep]
		}
	}
	if e != nil {
		v["TARGET"] = e.Name
		hostport := e.Name
		if i := strings.Index(hostport, "://"); i >= 0 {
			hostport = hostport[i+3:]
		}
		hostport, _, _ = strings.Cut(hostport, "/")
		// net/url, not net: the UI parses a name, it dials nothing.
		if u, err := url.Parse("//" + hostport); err == nil && u.Port() != "" {
			v["HOST"], v["PORT"] = u.Hostname(), u.Port()
		} else {
			v["HOST"] = hostport
		}
		if len(e.Models) > 0 {
			v["MODEL"] = e.Models[0]
		}
		v["POD"], v["NAMESPACE"] = e.Pod, e.Namespace
		var gpus []string
		for _, gi := range e.GPU.GPUs {
			if gi >= 0 && gi < len(m.fr.GPU.GPUs) {
				gpus = append(gpus, gpuIndex(&m.fr.GPU.GPUs[gi]))
			}
		}
		v["GPU"] = strings.Join(gpus, ",")
	}
	if m.focus == paneGPU && m.gpu.off < len(m.fr.GPU.GPUs) {
		v["GPU"] = gpuIndex(&m.fr.GPU.GPUs[gpuOrder(len(m.fr.GPU.GPUs), m.gpu.mine)[m.gpu.off]])
	}
	return v
}

// runAction starts the user's action a on what is selected.
func (m *Model) runAction(a *Action) tea.Cmd {
	vars := m.actionVars()
	what := vars["TARGET"]
	if what == "" {
		what = "GPU " + vars["GPU"]
	}
	m.note("running " + a.Name + " on " + what)
	return a.Run(vars)
}

// actionKey is the user's action bound to k, if any.
func (m *Model) actionKey(k tea.KeyMsg) *Action {
	for i := range m.opts.Actions {
		a := &m.opts.Actions[i]
		if key.Matches(k, key.NewBinding(key.WithKeys(a.Key))) {
			return a
		}
	}
	return nil
}
