package model

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestChildrenComeBackUnsortedInASeedDependentOrder pins down what code must not rely on: ZooKeeper returns
// children in its hash map's order, not sorted. The model returns them in an order fixed by its seed: the
// same seed gives the same order, other seeds other orders, and none of them sorts.
func TestChildrenComeBackUnsortedInASeedDependentOrder(t *testing.T) {
	const n = 20
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("c%02d", i))
	}
	list := func(seed int64) []string {
		srv := NewServer(WithSeed(seed))
		conn, _, err := srv.Connect(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Create("/p", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		for _, name := range names { // created in sorted order
			if _, err := conn.Create("/p/"+name, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
		}
		kids, _, err := conn.Children("/p")
		if err != nil {
			t.Fatal(err)
		}
		return kids
	}
	orders := map[string]int64{}
	for seed := int64(1); seed <= 8; seed++ {
		kids := list(seed)
		if got := slices.Sorted(slices.Values(kids)); !slices.Equal(got, names) {
			t.Fatalf("seed %d: children %v, want the set %v", seed, kids, names)
		}
		if slices.IsSorted(kids) {
			t.Fatalf("seed %d: children come back sorted %v; ZooKeeper does not sort them, and code must not rely on it", seed, kids)
		}
		if again := list(seed); !slices.Equal(again, kids) {
			t.Fatalf("seed %d: two servers with the same seed list %v and %v", seed, kids, again)
		}
		if other, ok := orders[fmt.Sprint(kids)]; ok {
			t.Fatalf("seeds %d and %d list the children in the same order %v", other, seed, kids)
		}
		orders[fmt.Sprint(kids)] = seed
	}
}
