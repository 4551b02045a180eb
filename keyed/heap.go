package keyed

// The owner's min-heap of waiting keys on their heads' due instants. Each
// key keeps its index, so that moving or removing it is O(log n) wherever
// it is.

func (s *shard[K]) push(e *entry[K]) {
	e.hidx = int32(len(s.heap))
	s.heap = append(s.heap, e)
	s.up(int(e.hidx))
}

func (s *shard[K]) remove(e *entry[K]) {
	i := int(e.hidx)
	if i < 0 {
		return
	}
	last := len(s.heap) - 1
	if i != last {
		s.swap(i, last)
	}
	s.heap[last] = nil
	s.heap = s.heap[:last]
	e.hidx = -1
	if i != last {
		s.fix(i)
	}
}

func (s *shard[K]) fix(i int) {
	if !s.down(i) {
		s.up(i)
	}
}

func (s *shard[K]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if s.heap[p].due <= s.heap[i].due {
			return
		}
		s.swap(i, p)
		i = p
	}
}

// down moves heap[i] down to its place and reports whether it moved.
func (s *shard[K]) down(i int) bool {
	start, n := i, len(s.heap)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && s.heap[r].due < s.heap[c].due {
			c = r
		}
		if s.heap[i].due <= s.heap[c].due {
			break
		}
		s.swap(i, c)
		i = c
	}
	return i > start
}

func (s *shard[K]) swap(i, j int) {
	s.heap[i], s.heap[j] = s.heap[j], s.heap[i]
	s.heap[i].hidx, s.heap[j].hidx = int32(i), int32(j)
}
