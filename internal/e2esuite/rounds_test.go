package e2esuite

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	o := Order(rng, 4, 9)
	first := slices.Clone(o[:4])
	slices.Sort(first)
	if len(o) != 9 || !slices.Equal(first, []int{0, 1, 2, 3}) {
		t.Errorf("order %v: want every kind once, then 5 picks", o)
	}
	for _, k := range o {
		if k < 0 || k >= 4 {
			t.Errorf("order %v names no kind", o)
		}
	}
	if o := Order(rng, 4, 2); len(o) != 2 {
		t.Errorf("order %v for 2 rounds", o)
	}
}

func TestExited(t *testing.T) {
	codes := map[string]int{"a": 0, "b": 5, "c": 0, "d": -9}
	if n := Exited(codes, 0); n != 2 {
		t.Errorf("%d exited 0, want 2", n)
	}
	if n := Exited(codes, 7); n != 0 {
		t.Errorf("%d exited 7, want none", n)
	}
}
