//go:build !unix

package sim

import "net"

// holdPort cannot keep a port bound without listening here: the port is
// merely closed while the simulated server is down.
func holdPort(*net.TCPAddr) func() { return nil }
