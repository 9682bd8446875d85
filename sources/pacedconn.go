package sources

import (
	"net"
	"time"
)

// pacedConn reads a large answer that arrives as the server writes it in
// fewer, larger reads. Unpaced, a reader that keeps up with the server
// finds a few KiB each time, parks on the poller and is woken for the
// next: a 2,000-replica /federate refresh (~110 MB over four connections)
// took 11,000–20,000 reads and as many wake-ups, a fifth of the process's
// CPU in the kernel and the scheduler. Once a connection has read
// pacedStreak bytes in one run, a read that found less than pacedShort
// waiting is followed by a pause before the next, so the next read takes
// what the server wrote meanwhile. A read after a pause that finds less
// than pacedEnd (the answer ended, and this is the next one's head or a
// small answer) ends the run: the next answers on the connection are read
// without pauses until one is as large again. A pause costs an answer at
// most pacedPause of wall time at its end.
type pacedConn struct {
	net.Conn
	sleep func(time.Duration) // time.Sleep; tests count the pauses
	run   int64               // bytes read since the run began
	short bool                // the last read found less than pacedShort
}

const (
	pacedStreak = 1 << 20
	pacedShort  = 32 << 10
	pacedEnd    = 4 << 10
	pacedPause  = 5 * time.Millisecond
)

func newPacedConn(c net.Conn) *pacedConn { return &pacedConn{Conn: c, sleep: time.Sleep} }

func (c *pacedConn) Read(b []byte) (int, error) {
	pause := c.short && c.run >= pacedStreak && len(b) >= pacedShort
	if pause {
		c.sleep(pacedPause)
	}
	n, err := c.Conn.Read(b)
	c.short = n < pacedShort
	if pause && n < pacedEnd || err != nil {
		c.run = 0
	}
	c.run += int64(n)
	return n, err
}
