package telemetry

import (
	"strconv"
	"strings"
	"testing"
)

// TestIDSet: an id is added once and keeps its first value, ids that
// share a hash are told apart, and the empty id is an id like another.
func TestIDSet(t *testing.T) {
	s := newIDSet[int]()
	type step struct {
		hash      uint64 // 0: the set's own hash; 1: insertBytes
		id        string
		v, want   int
		wantAdded bool
	}
	for i, st := range []step{
		{id: "a", v: 1, want: 1, wantAdded: true},
		{id: "b", v: 2, want: 2, wantAdded: true},
		{id: "a", v: 3, want: 1},
		{id: "", v: 4, want: 4, wantAdded: true},
		{id: "", v: 5, want: 4},
		{hash: 7, id: "x", v: 6, want: 6, wantAdded: true},
		{hash: 7, id: "y", v: 7, want: 7, wantAdded: true}, // same hash, another id
		{hash: 7, id: "x", v: 8, want: 6},
		{hash: 7, id: "y", v: 9, want: 7},
		{hash: 7, id: "xy", v: 10, want: 10, wantAdded: true},
		{hash: 1, id: "b", v: 11, want: 2},                       // as bytes
		{hash: 1, id: "bytes", v: 12, want: 12, wantAdded: true}, // as bytes
		{id: "bytes", v: 13, want: 12},
	} {
		var got int
		var added bool
		switch st.hash {
		case 0:
			got, added = s.insert(st.id, st.v)
		case 1:
			got, added = s.insertBytes([]byte(st.id), st.v)
		default:
			got, added = s.insertHash(st.hash, st.id, st.v)
		}
		if got != st.want || added != st.wantAdded {
			t.Fatalf("step %d: insert(%q, %d) = %d, %v; want %d, %v", i, st.id, st.v, got, added, st.want, st.wantAdded)
		}
	}
	for _, id := range []string{"a", "b", ""} {
		if !s.has(id) {
			t.Errorf("has(%q) = false after insert", id)
		}
	}
	if s.has("c") {
		t.Error(`has("c") = true, never inserted`)
	}

	// Many ids: every one added once, found again, and none taken for
	// another (prefixes of each other included).
	m := newIDSet[int]()
	for i := range 50_000 {
		if _, added := m.insert("gen/"+strconv.Itoa(i), i); !added {
			t.Fatalf("gen/%d: taken for an id added before", i)
		}
	}
	for i := range 50_000 {
		if v, added := m.insert("gen/"+strconv.Itoa(i), -1); added || v != i {
			t.Fatalf("gen/%d again: %d, %v; want %d, false", i, v, added, i)
		}
	}
}

// BenchmarkIDSetInsert adds a million session ids and looks each up
// again, as an import checks a trace's ids.
func BenchmarkIDSetInsert(b *testing.B) {
	ids := make([]string, 1_000_000)
	for i := range ids {
		ids[i] = "gen/" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s := newIDSet[struct{ file, line int32 }]()
		for i, id := range ids {
			s.insert(id, struct{ file, line int32 }{0, int32(i)})
		}
		for _, id := range ids {
			if !s.has(id) {
				b.Fatal(id)
			}
		}
	}
}

// TestIDSetBytesLookupAllocatesNothing: finding an id given as bytes
// allocates nothing at any length, since stats looks up every session id
// of every segment so (36-byte UUIDs are common).
func TestIDSetBytesLookupAllocatesNothing(t *testing.T) {
	for _, n := range []int{8, 32, 37, 200} {
		s := newIDSet[int32]()
		id := []byte(strings.Repeat("i", n))
		s.insertBytes(id, 1)
		if allocs := testing.AllocsPerRun(100, func() { s.insertBytes(id, 2) }); allocs != 0 {
			t.Errorf("id of %d bytes: %v allocations per lookup, want 0", n, allocs)
		}
	}
}
