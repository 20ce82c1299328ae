package agent

import "testing"

// TestDirtyPoolTiers: a buffer has the length asked for and the capacity
// of the smallest power-of-two tier that holds it; one put back is found
// in that tier; sizes outside the tiers are served and not kept.
func TestDirtyPoolTiers(t *testing.T) {
	p := newDirtyPool()
	for _, tc := range []struct{ length, capacity int }{
		{0, 512}, {1, 512}, {512, 512}, {513, 1024}, {32 << 10, 32 << 10},
		{32<<10 + 5, 64 << 10}, {4 << 20, 4 << 20},
	} {
		b := p.Get(tc.length)
		if len(*b) != tc.length || cap(*b) != tc.capacity {
			t.Errorf("Get(%d): len %d cap %d, want len %d cap %d", tc.length, len(*b), cap(*b), tc.length, tc.capacity)
		}
		p.Put(b)
	}
	if b := p.Get(4<<20 + 1); len(*b) != 4<<20+1 {
		t.Errorf("Get past the largest tier: len %d", len(*b))
	}
	// What is put back is what the tier hands out next (sync.Pool keeps
	// it on this P unless a collection runs in between).
	b := p.Get(100 << 10)
	(*b)[0] = 0xAA
	p.Put(b)
	got := p.Get(70 << 10)
	if cap(*got) != 128<<10 {
		t.Fatalf("cap %d, want 128 KiB", cap(*got))
	}
	if &(*got)[0] == &(*b)[0] && (*got)[0] != 0xAA {
		t.Error("a reused buffer was cleared")
	}
	// Odd capacities are not kept: a later Get never sees them.
	odd := make([]byte, 3000)
	p.Put(&odd)
	if g := p.Get(2048); cap(*g) != 2048 {
		t.Errorf("cap %d after putting an odd buffer, want 2048", cap(*g))
	}
}
