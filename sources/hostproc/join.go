package hostproc

import (
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// Want is a local endpoint to find the processes of.
type Want struct {
	Host string // the target's host: "localhost" or an IP of this machine
	Port int
}

// matches reports whether a connection to the endpoint reaches l.
func (w Want) matches(l Listener) bool {
	if l.Port != w.Port {
		return false
	}
	if l.IP.IsUnspecified() {
		return true
	}
	if w.Host == "localhost" {
		return l.IP.IsLoopback()
	}
	ip := net.ParseIP(w.Host)
	if ip == nil {
		return false
	}
	if ip.IsUnspecified() { // connecting to 0.0.0.0 reaches loopback
		return l.IP.IsLoopback()
	}
	return ip.Equal(l.IP)
}

// DefaultFullScanEvery bounds how often the expensive scan of every
// process's fds runs for an endpoint the cheap paths did not resolve.
const DefaultFullScanEvery = 30 * time.Second

// Joiner maps endpoints to process trees, cheaply when it can: a holder
// found before is trusted while it lives and still holds the socket (no
// need to read /proc/net/tcp, which is slow on busy hosts); otherwise the
// GPU processes and their ancestors are checked first (vLLM's API server is
// the parent of the engine that holds the GPU), and only then, rarely,
// every process.
type Joiner struct {
	root          string
	CgroupRoot    string // where the cgroup hierarchy is mounted ("/sys/fs/cgroup")
	FullScanEvery time.Duration
	found         map[Want]holder // the root found last time, with its sockets
	misses        map[Want]miss   // the last full scan that found nothing
}

type holder struct {
	pid    int
	start  uint64
	inodes map[uint64]bool
}

type miss struct {
	at   time.Time
	note string
}

// NewJoiner reads processes under root ("/proc").
func NewJoiner(root string) *Joiner {
	return &Joiner{root: root, CgroupRoot: "/sys/fs/cgroup", FullScanEvery: DefaultFullScanEvery, found: map[Want]holder{}, misses: map[Want]miss{}}
}

// pass is one Join: the tables read once and the fds already looked at.
type pass struct {
	j     *Joiner
	table *Table
	fds   map[int]fdSet
}

type fdSet struct {
	inodes []uint64
	denied bool // another user's process: its fds cannot be read
}

func (p *pass) holds(pid int, inodes map[uint64]bool) bool {
	fds, ok := p.fds[pid]
	if !ok {
		fds.inodes, fds.denied = socketInodes(p.j.root, pid)
		p.fds[pid] = fds
	}
	for _, ino := range fds.inodes {
		if inodes[ino] {
			return true
		}
	}
	return false
}

// Join returns the process tree of each endpoint, indexed like wants.
// gpuPIDs are the processes holding GPU memory: the cheap first guess.
func (j *Joiner) Join(wants []Want, gpuPIDs []int, now time.Time) []sources.ProcTree {
	out := make([]sources.ProcTree, len(wants))
	table, err := ReadTable(j.root)
	if err != nil {
		for i := range out {
			out[i].Note = "cannot read processes: " + sources.Sanitize(err.Error(), 120)
		}
		return out
	}
	p := &pass{j: j, table: table, fds: map[int]fdSet{}}
	var cands []int
	for _, g := range gpuPIDs {
		if _, ok := table.Procs[g]; ok {
			cands = append(cands, g)
			cands = append(cands, table.Ancestors(g)...)
		}
	}
	var ls []Listener
	var lsErr error
	lsRead := false
	for i, w := range wants {
		if h, ok := j.found[w]; ok && table.Procs[h.pid].PID == h.pid && table.Procs[h.pid].Start == h.start && p.holds(h.pid, h.inodes) {
			out[i] = p.tree(w, map[int]bool{h.pid: true}, h.inodes)
			continue
		}
		delete(j.found, w)
		if !lsRead {
			ls, lsErr = Listeners(j.root)
			lsRead = true
		}
		if lsErr != nil {
			out[i].Note = "cannot read listening sockets: " + sources.Sanitize(lsErr.Error(), 120)
			continue
		}
		out[i] = p.one(w, ls, cands, now)
	}
	return out
}

func (p *pass) one(w Want, ls []Listener, cands []int, now time.Time) sources.ProcTree {
	j, t := p.j, p.table
	inodes := map[uint64]bool{}
	uid := -1
	for _, l := range ls {
		if w.matches(l) {
			inodes[l.Inode] = true
			uid = l.UID
		}
	}
	if len(inodes) == 0 {
		return sources.ProcTree{Note: fmt.Sprintf("no process listens on port %d here", w.Port)}
	}
	found := map[int]bool{}
	for _, c := range cands {
		if p.holds(c, inodes) {
			found[c] = true
			break
		}
	}
	if len(found) == 0 {
		if m, ok := j.misses[w]; ok && now.Sub(m.at) < j.FullScanEvery {
			return sources.ProcTree{Note: m.note}
		}
		denied := 0
		for pid := range t.Procs {
			// PID 1 holding a socket is socket activation: the service is its child.
			if pid > 1 && p.holds(pid, inodes) {
				found[pid] = true
			}
			if p.fds[pid].denied {
				denied++
			}
		}
		if len(found) == 0 {
			note := fmt.Sprintf("no process visible here holds port %d (socket owner uid %d): vLLM may run in another PID namespace", w.Port, uid)
			if denied > 0 {
				note = fmt.Sprintf("cannot tell which process holds port %d: %d processes of other users are unreadable (run vtop as uid %d or root)", w.Port, denied, uid)
			}
			j.misses[w] = miss{at: now, note: note}
			return sources.ProcTree{Note: note}
		}
	}
	delete(j.misses, w)
	return p.tree(w, found, inodes)
}

// tree climbs from the holders found to the topmost process holding the
// socket (vLLM's parent may hold the socket it hands to several API-server
// processes), remembers it, and returns it with every descendant.
func (p *pass) tree(w Want, found map[int]bool, inodes map[uint64]bool) sources.ProcTree {
	t := p.table
	for pid := range found {
		for _, a := range t.Ancestors(pid) {
			if found[a] || !p.holds(a, inodes) {
				break
			}
			found[a] = true
		}
	}
	var roots []int
	for pid := range found {
		if !found[t.Procs[pid].PPID] {
			roots = append(roots, pid)
		}
	}
	slices.Sort(roots)
	root := t.Procs[roots[0]]
	p.j.found[w] = holder{pid: root.PID, start: root.Start, inodes: inodes}
	lim, from := MemLimit(p.j.root, p.j.CgroupRoot, root.PID)
	return sources.ProcTree{Root: root.PID, RootName: root.Comm, PIDs: t.Subtree(roots...), MemLimit: lim, MemLimitFrom: from}
}
