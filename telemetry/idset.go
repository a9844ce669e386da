package telemetry

import (
	"hash/maphash"
	"unsafe"
)

// idSet is a set of strings, each with a value, kept in slices that hold
// no pointers: the garbage collector does not trace them, so a million
// session ids held through an import cost it nothing per cycle (a map of
// strings is traced in full at every cycle, and that work grows with the
// import). Entries are found by open addressing over their hashes, so an
// insert costs no map operation and growing rehashes from the stored
// hashes. The zero idSet is not ready; use newIDSet.
type idSet[V any] struct {
	seed   maphash.Seed
	slots  []int32  // entry+1 by hash, 0 for none; a power of two, at most half full
	hashes []uint64 // per entry
	bytes  []byte   // the strings, end to end
	ends   []int    // entry i is bytes[ends[i-1]:ends[i]]
	vals   []V
}

// idSetMinSlots is the table an empty idSet starts with.
const idSetMinSlots = 1 << 10

func newIDSet[V any]() *idSet[V] {
	return &idSet[V]{seed: maphash.MakeSeed(), slots: make([]int32, idSetMinSlots)}
}

// insert adds id with v and returns true, or returns the value id was
// added with and false when it is there already.
func (s *idSet[V]) insert(id string, v V) (V, bool) {
	return s.insertHash(maphash.String(s.seed, id), id, v)
}

// insertHash is insert with id's hash h.
func (s *idSet[V]) insertHash(h uint64, id string, v V) (V, bool) {
	slot, i, ok := s.find(h, id)
	if ok {
		return s.vals[i], false
	}
	return add(s, slot, h, id, v), true
}

// insertBytes is insert with id as bytes, which it copies.
func (s *idSet[V]) insertBytes(id []byte, v V) (V, bool) {
	h := maphash.Bytes(s.seed, id)
	// A string over id's bytes for the lookup only: find keeps no
	// reference and add copies, so no id of any length allocates here
	// (string(id) would, past 32 bytes).
	slot, i, ok := s.find(h, unsafe.String(unsafe.SliceData(id), len(id)))
	if ok {
		return s.vals[i], false
	}
	return add(s, slot, h, id, v), true
}

// add appends id, of hash h, with v, into the free slot find returned.
func add[V any, ID string | []byte](s *idSet[V], slot int, h uint64, id ID, v V) V {
	s.bytes = append(s.bytes, id...)
	s.ends = append(s.ends, len(s.bytes))
	s.hashes = append(s.hashes, h)
	s.vals = append(s.vals, v)
	s.slots[slot] = int32(len(s.ends))
	if 2*len(s.ends) > len(s.slots) {
		s.grow()
	}
	return v
}

// grow doubles the table and places every entry again.
func (s *idSet[V]) grow() {
	s.slots = make([]int32, 2*len(s.slots))
	mask := uint64(len(s.slots) - 1)
	for i, h := range s.hashes {
		j := h & mask
		for s.slots[j] != 0 {
			j = (j + 1) & mask
		}
		s.slots[j] = int32(i + 1)
	}
}

// has reports whether id is in the set.
func (s *idSet[V]) has(id string) bool {
	_, _, ok := s.find(maphash.String(s.seed, id), id)
	return ok
}

// find returns id's entry, or false and the free slot it would take.
func (s *idSet[V]) find(h uint64, id string) (slot, entry int, ok bool) {
	mask := uint64(len(s.slots) - 1)
	for j := h & mask; ; j = (j + 1) & mask {
		e := int(s.slots[j]) - 1
		if e < 0 {
			return int(j), 0, false
		}
		if s.hashes[e] == h && string(s.at(e)) == id {
			return int(j), e, true
		}
	}
}

func (s *idSet[V]) at(i int) []byte {
	from := 0
	if i > 0 {
		from = s.ends[i-1]
	}
	return s.bytes[from:s.ends[i]]
}
