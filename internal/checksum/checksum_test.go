package checksum

import "testing"

func TestOf(t *testing.T) {
	type doc struct {
		A string
		N int
	}
	a, err := Of(doc{"x", 1})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Of(doc{"x", 1})
	c, _ := Of(doc{"x", 2})
	if a != b || a == c {
		t.Fatalf("same documents %x %x, different %x", a, b, c)
	}
	if _, err := Of(make(chan int)); err == nil {
		t.Fatal("a value JSON cannot encode gave a checksum")
	}
}
