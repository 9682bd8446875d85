package sources

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// SmallBody is the body buffer any scrape may hold on its own: a real vLLM
// scrape is ~60 KiB, a 16-rank data-parallel one with a few models under
// 512 KiB. Buffers up to this size are pooled between scrapes.
const SmallBody = 512 << 10

// bodyBudget bounds the memory of large bodies in flight across all targets,
// so that peak memory does not depend on how many hostile or oversize
// targets (44 MiB bodies, gzip bombs) happen to be read at once: every byte
// of buffer beyond SmallBody is taken from it before it is allocated, and
// given back when the scrape is done with its body.
type bodyBudget struct {
	limit int64
	used  atomic.Int64
}

// take reserves n more bytes, or fails when the budget has not got them:
// failing at once (not waiting) means large readers can never hold parts of
// the budget while waiting for each other.
func (b *bodyBudget) take(n int64) bool {
	for {
		cur := b.used.Load()
		if cur+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

var errBodyBudget = errors.New("large body not read")

func (b *bodyBudget) give(n int64) { b.used.Add(-n) }

// defaultBodyBudget: room for two bodies at the size cap, and no less than
// 32 MiB, so one legitimately large target is read beside a hostile one.
func defaultBodyBudget(maxBody int64) int64 { return max(2*(maxBody+1), 32<<20) }

// readBody reads at most limit bytes of r into st.Buf, growing the buffer by
// doubling; growth beyond SmallBody is reserved from the budget first
// (st.held). Errors say what happened; the caller words timeouts.
func (f *Fetcher) readBody(r io.Reader, st *FetchState, limit int64) (int64, error) {
	b := st.Buf.AvailableBuffer() // len 0: the buffer was Reset
	for {
		if len(b) == cap(b) {
			if int64(len(b)) >= limit {
				break
			}
			grow := min(max(2*int64(cap(b)), 32<<10), limit)
			if over := grow - SmallBody; over > st.held {
				if !f.budget.take(over - st.held) {
					st.Buf.Reset()
					return int64(len(b)), fmt.Errorf("%w: over %s while other targets' large bodies hold the %s vtop shares for them (retried next poll)",
						errBodyBudget, byteSize(int64(len(b))), byteSize(f.budget.limit))
				}
				st.held = over
			}
			nb := make([]byte, len(b), grow)
			copy(nb, b)
			b = nb
		}
		m, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			break
		}
		if err != nil {
			*st.Buf = *bytes.NewBuffer(b[:0])
			return int64(len(b)), err
		}
	}
	*st.Buf = *bytes.NewBuffer(b)
	return int64(len(b)), nil
}

// Release gives back what the last scrape took from the large-body budget;
// call it once nothing refers to the body any more.
func (f *Fetcher) Release(st *FetchState) {
	if st.held > 0 {
		f.budget.give(st.held)
		st.held = 0
	}
}
