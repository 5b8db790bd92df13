package check

import (
	"testing"

	"github.com/anishathalye/porcupine"
	"pgregory.net/rapid"
)

// TestLinearizableAgreesWithPorcupine: linearizable, which judges a history whose operations do not overlap
// without porcupine, answers as porcupine.CheckOperations on random histories of a register — sequential
// ones (its own path), overlapping ones and ones with equal call and return times (porcupine's).
func TestLinearizableAgreesWithPorcupine(t *testing.T) {
	type regOp struct {
		write bool
		value int
	}
	register := porcupine.Model{
		Init: func() any { return 0 },
		Step: func(state, input, output any) (bool, any) {
			op := input.(regOp)
			if op.write {
				return true, op.value
			}
			return output.(int) == state.(int), state
		},
	}
	sequential := 0
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 8).Draw(t, "ops")
		ops := make([]porcupine.Operation, n)
		clock, apart := int64(0), true
		for i := range ops {
			clock += int64(rapid.IntRange(-2, 3).Draw(t, "gap")) // ≤ 0: overlaps the previous operation, or touches it
			call := max(clock, 0)
			ret := call + int64(rapid.IntRange(0, 3).Draw(t, "length"))
			clock = ret
			write := rapid.Bool().Draw(t, "write")
			value := rapid.IntRange(0, 2).Draw(t, "value")
			ops[i] = porcupine.Operation{ClientId: i % 3, Input: regOp{write, value}, Call: call, Output: value, Return: ret}
			if i > 0 && call <= ops[i-1].Return {
				apart = false
			}
		}
		if apart {
			sequential++
		}
		if got, want := linearizable(register, ops), porcupine.CheckOperations(register, ops); got != want {
			t.Fatalf("linearizable says %t, porcupine %t, of %+v", got, want, ops)
		}
	})
	if sequential == 0 {
		t.Fatal("no history had operations apart: linearizable's own path was not compared")
	}
}
