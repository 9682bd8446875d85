//go:build cgo

package nvml

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vtop-dev/vtop/sources"
)

// procName reads a process's name from /proc/PID/comm; ok is false when the
// PID is not in this /proc (gone, or in another PID namespace).
func procName(root string, pid int) (string, bool) {
	b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "comm"))
	if err != nil {
		if os.IsPermission(err) {
			return "", true // it exists; we may not read it
		}
		return "", false
	}
	return sources.Sanitize(strings.TrimRight(string(b), "\n"), 64), true
}

// procCensus counts GPU processes against this /proc, to tell a container
// without host PIDs from a host where names are simply unreadable.
type procCensus struct {
	listed, absent int
}

func (c *procCensus) add(inProc bool) {
	c.listed++
	if !inProc {
		c.absent++
	}
}

// note explains an empty or foreign process list; "" when nothing is odd.
func (c *procCensus) note(gpus []sources.GPU) string {
	if c.listed > 0 && c.absent == c.listed {
		return fmt.Sprintf("none of the %d GPU processes is in this /proc: vtop runs in another PID namespace (a container without --pid=host), so process names and the endpoint join are unavailable", c.listed)
	}
	if c.listed > 0 {
		return ""
	}
	for _, g := range gpus {
		// Memory in use but nobody holds it: NVML hides processes outside
		// the caller's container on some setups.
		if g.Problem == "" && !math.IsNaN(g.MemUsed) && g.MemUsed > 1<<30 && g.MemUsed > 0.05*g.MemTotal && g.Processes != nil {
			return fmt.Sprintf("NVML lists no GPU processes while GPU %d has %.1f GiB in use: vtop may run in a container that cannot see the serving processes", g.Index, g.MemUsed/(1<<30))
		}
	}
	return ""
}
