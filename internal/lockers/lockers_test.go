package lockers

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// fakeLease records the calls a SemaphoreLocker makes.
type fakeLease struct {
	calls []string
	lost  chan struct{}
}

func (f *fakeLease) Acquire(context.Context) error { f.calls = append(f.calls, "acquire"); return nil }
func (f *fakeLease) Release(context.Context) error {
	f.calls = append(f.calls, "release")
	return errors.New("released twice")
}
func (f *fakeLease) Token() int64          { return 7 }
func (f *fakeLease) Lost() <-chan struct{} { return f.lost }

// fakeCandidate records the calls and values an ElectionLocker passes on; it has no Lost.
type fakeCandidate struct {
	calls  []string
	values [][]byte
}

func (f *fakeCandidate) Campaign(_ context.Context, value []byte) error {
	f.calls, f.values = append(f.calls, "campaign"), append(f.values, value)
	return nil
}
func (f *fakeCandidate) Resign(context.Context) error {
	f.calls = append(f.calls, "resign")
	return nil
}
func (f *fakeCandidate) Token() int64 { return 9 }

// TestAdaptersPassEachCallOn: Lock, Unlock, Token and Lost reach the semaphore's and the candidate's own
// methods, errors included; the candidate campaigns with a copy of the value; without a Lost of its own a
// Locker is never lost (nil).
func TestAdaptersPassEachCallOn(t *testing.T) {
	ctx := context.Background()
	lease := &fakeLease{lost: make(chan struct{})}
	s := Semaphore(lease)
	if err := s.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Unlock(ctx); err == nil || err.Error() != "released twice" {
		t.Errorf("Unlock = %v, want the semaphore's own error", err)
	}
	if !slices.Equal(lease.calls, []string{"acquire", "release"}) || s.Token() != 7 || s.Lost() != lease.lost {
		t.Errorf("semaphore: calls %v, token %d, lost %v: want acquire, release; 7; its own channel", lease.calls, s.Token(), s.Lost())
	}

	c := &fakeCandidate{}
	value := []byte("me")
	e := Election(c, value)
	value[0] = 'X'
	if err := e.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.calls, []string{"campaign", "resign"}) || string(c.values[0]) != "me" || e.Token() != 9 || e.Lost() != nil {
		t.Errorf("election: calls %v, value %q, token %d, lost %v: want campaign, resign; \"me\"; 9; nil", c.calls, c.values, e.Token(), e.Lost())
	}
}

// TestZKLockHasNoToken: zk.Lock gives no fencing token, so its Locker's Token is 0, and it has no Lost.
func TestZKLockHasNoToken(t *testing.T) {
	l := ZKLock(nil)
	if l.Token() != 0 || LostOf(l) != nil {
		t.Errorf("ZKLock: token %d, lost %v; want 0 and nil", l.Token(), LostOf(l))
	}
}
