package telemetry

import "hash/maphash"

// idSet is a set of strings, each with a value, kept in slices and a map
// that hold no pointers: the garbage collector does not trace them, so a
// million session ids held through an import cost it nothing per cycle
// (a map of strings is traced in full at every cycle, and that work grows
// with the import). The zero idSet is not ready; use newIDSet.
type idSet[V any] struct {
	seed  maphash.Seed
	first map[uint64]int // hash -> its latest entry
	bytes []byte         // the strings, end to end
	ends  []int          // entry i is bytes[ends[i-1]:ends[i]]
	next  []int          // the entry before with the same hash, or -1
	vals  []V
}

func newIDSet[V any]() *idSet[V] {
	return &idSet[V]{seed: maphash.MakeSeed(), first: map[uint64]int{}}
}

// insert adds id with v and returns true, or returns the value id was
// added with and false when it is there already.
func (s *idSet[V]) insert(id string, v V) (V, bool) {
	return s.insertHash(maphash.String(s.seed, id), id, v)
}

// insertHash is insert with id's hash h.
func (s *idSet[V]) insertHash(h uint64, id string, v V) (V, bool) {
	if i, ok := s.find(h, id); ok {
		return s.vals[i], false
	}
	return add(s, h, id, v), true
}

// add appends id, of hash h, with v.
func add[V any, ID string | []byte](s *idSet[V], h uint64, id ID, v V) V {
	head, ok := s.first[h]
	if !ok {
		head = -1
	}
	s.bytes = append(s.bytes, id...)
	s.ends = append(s.ends, len(s.bytes))
	s.next = append(s.next, head)
	s.vals = append(s.vals, v)
	s.first[h] = len(s.ends) - 1
	return v
}

// insertBytes is insert with id as bytes, which it copies.
func (s *idSet[V]) insertBytes(id []byte, v V) (V, bool) {
	h := maphash.Bytes(s.seed, id)
	if i, ok := s.find(h, string(id)); ok { // no allocation for the comparison
		return s.vals[i], false
	}
	return add(s, h, id, v), true
}

// has reports whether id is in the set.
func (s *idSet[V]) has(id string) bool {
	_, ok := s.find(maphash.String(s.seed, id), id)
	return ok
}

func (s *idSet[V]) find(h uint64, id string) (int, bool) {
	head, ok := s.first[h]
	if !ok {
		return 0, false
	}
	for i := head; i >= 0; i = s.next[i] {
		if string(s.at(i)) == id {
			return i, true
		}
	}
	return 0, false
}

func (s *idSet[V]) at(i int) []byte {
	from := 0
	if i > 0 {
		from = s.ends[i-1]
	}
	return s.bytes[from:s.ends[i]]
}
