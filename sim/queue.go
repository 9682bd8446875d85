package sim

// queue is the scheduler's waiting queue: FIFO, with preempted requests
// going back to the front, as vLLM does.
type queue struct {
	items []*request
	head  int
}

func (q *queue) len() int            { return len(q.items) - q.head }
func (q *queue) pushBack(r *request) { q.items = append(q.items, r) }
func (q *queue) front() *request     { return q.items[q.head] }

func (q *queue) popFront() *request {
	r := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return r
}

func (q *queue) pushFront(r *request) {
	if q.head == 0 {
		// Make room at the front once for many preemptions to come.
		spare := max(8, q.len()/4)
		items := make([]*request, spare+q.len(), spare+q.len()+cap(q.items)/4+1)
		copy(items[spare:], q.items)
		q.items, q.head = items, spare
	}
	q.head--
	q.items[q.head] = r
}

// filter keeps the requests for which keep returns true, in order.
func (q *queue) filter(keep func(*request) bool) {
	j := q.head
	for i := q.head; i < len(q.items); i++ {
		if r := q.items[i]; keep(r) {
			q.items[j] = r
			j++
		}
	}
	clear(q.items[j:])
	q.items = q.items[:j]
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
}

func (q *queue) clear() {
	clear(q.items)
	q.items, q.head = q.items[:0], 0
}
