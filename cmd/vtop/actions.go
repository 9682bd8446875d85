package main

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"go.yaml.in/yaml/v3"

	"github.com/vtop-dev/vtop/ui"
)

// action is a user's command from the config file's actions: section,
// like a k9s plugin: a name, a key, and the command as separate words.
type action struct {
	Name    string   `yaml:"name"`
	Key     string   `yaml:"key"`
	Command []string `yaml:"command"`
}

// actionVars are the names a command may use; each is replaced inside a
// word and the word stays one argument, so a label value with spaces, ;
// or $(…) reaches the program as text, never through a shell.
var actionVars = []string{"$NAMESPACE", "$TARGET", "$MODEL", "$HOST", "$PORT", "$POD", "$GPU"}

func parseActions(n *yaml.Node) ([]action, error) {
	var as []action
	if err := n.Decode(&as); err != nil {
		return nil, fmt.Errorf("actions: %v", err)
	}
	keys := map[string]bool{}
	for i, a := range as {
		switch {
		case a.Name == "" || a.Key == "" || len(a.Command) == 0 || a.Command[0] == "":
			return nil, fmt.Errorf("actions[%d]: give name, key and command (a list of words)", i)
		case ui.Reserved(a.Key):
			return nil, fmt.Errorf("actions[%d] %q: key %q is vtop's own", i, a.Name, a.Key)
		case keys[a.Key]:
			return nil, fmt.Errorf("actions[%d] %q: key %q is taken by another action", i, a.Name, a.Key)
		case strings.Contains(a.Command[0], "$"):
			return nil, fmt.Errorf("actions[%d] %q: the program (%q) cannot come from a value", i, a.Name, a.Command[0])
		}
		keys[a.Key] = true
	}
	return as, nil
}

// expand replaces the variables in each word of argv; a word stays one
// argument whatever the value holds.
func expand(argv []string, vars map[string]string) []string {
	out := make([]string, len(argv))
	for i, w := range argv {
		for _, v := range actionVars {
			w = strings.ReplaceAll(w, v, vars[strings.TrimPrefix(v, "$")])
		}
		out[i] = w
	}
	return out
}

// command is the process an action runs on vars: argv, no shell.
func (a action) command(vars map[string]string) *exec.Cmd {
	argv := expand(a.Command, vars)
	return exec.Command(argv[0], argv[1:]...)
}

// uiActions binds the actions for the TUI: the terminal is handed to the
// command (tea.ExecProcess) and taken back when it exits.
func uiActions(as []action) []ui.Action {
	out := make([]ui.Action, len(as))
	for i, a := range as {
		a := a
		out[i] = ui.Action{Name: a.Name, Key: a.Key, Run: func(vars map[string]string) tea.Cmd {
			return tea.ExecProcess(a.command(vars), func(err error) tea.Msg {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					err = fmt.Errorf("exit status %d", ee.ExitCode())
				}
				return ui.ActionDone{Name: a.Name, Err: err}
			})
		}}
	}
	return out
}
