package engine

import (
	"testing"
	"time"
)

// named is an Engine that is only told apart by its name (Switch and Pin
// call none of its methods).
type named struct {
	Engine
	name string
}

// TestPinHoldsTheEngineAcrossASwitch: a pinned engine stays the one the
// caller uses while a Switch happens: new calls go to the new engine at
// once, and Switch returns the old one only after the pin is released.
func TestPinHoldsTheEngineAcrossASwitch(t *testing.T) {
	old, next := &named{name: "old"}, &named{name: "next"}
	s := NewSwitchable(old)
	pinned, release := s.Pin()
	if pinned != old {
		t.Fatalf("pinned %v, want the engine in use", pinned)
	}
	returned := make(chan Engine, 1)
	go func() { returned <- s.Switch(next) }()
	for deadline := time.Now().Add(30 * time.Second); s.Current() != next; {
		if time.Now().After(deadline) {
			t.Fatal("Switch did not make the new engine current")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case e := <-returned:
		t.Fatalf("Switch returned %v while the old engine was pinned", e)
	default:
	}
	if e, r := s.Pin(); e != next {
		t.Fatalf("a pin after the switch got %v, want the new engine", e)
	} else {
		r()
	}
	release()
	release() // a second release is harmless
	if e := <-returned; e != old {
		t.Fatalf("Switch returned %v, want the old engine", e)
	}
}
