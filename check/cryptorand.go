package check

import (
	crand "crypto/rand"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
)

// go-zookeeper's CreateProtectedEphemeralSequential (zk.Lock uses it) names its nodes from crypto/rand.Reader;
// with the real one no run of such a lock would replay. While RunZK's runs are under way, crypto/rand.Reader
// is a dispatcher that gives each run a stream of its own, fixed by the run's seed: with one run at a
// time, every read is that run's (the scheduler lets one client act at a time, so the clients read their
// stream in a fixed order); with several workers' runs at once, a read is the run's whose client goroutine (or
// scheduler) makes it, and a read by a goroutine no run started — or any read while no run is under way —
// gets real randomness. The dispatcher is installed once, by the first run, and stays: crypto/rand.Reader is
// a two-word interface that other goroutines read without a lock (recipe.newLock does), so writing it again
// whenever runs start or end raced with those reads (go test -race on the RunZK tests reported it); a write
// made once, before the first run starts its goroutines, happens before all of their reads.

// runRand is one run's deterministic stream.
type runRand struct {
	mu sync.Mutex
	r  randReader
}

func (rr *runRand) Read(p []byte) (int, error) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.r.Read(p)
}

// installDispatcher makes dispatchReader crypto/rand.Reader, once in the process's life.
var installDispatcher sync.Once

var cryptoRuns struct {
	sync.Mutex
	real   io.Reader
	active map[*runRand]int // a run's stream, with how many of its goroutines are registered
	byG    map[uint64]*runRand
}

// dispatchReader is crypto/rand.Reader while runs are under way.
type dispatchReader struct{}

func (dispatchReader) Read(p []byte) (int, error) {
	cryptoRuns.Lock()
	var rr *runRand
	if len(cryptoRuns.active) == 0 {
		real := cryptoRuns.real
		cryptoRuns.Unlock()
		return real.Read(p)
	}
	if len(cryptoRuns.active) == 1 {
		for k := range cryptoRuns.active {
			rr = k
		}
	} else {
		rr = cryptoRuns.byG[goroutineID()]
	}
	real := cryptoRuns.real
	cryptoRuns.Unlock()
	if rr == nil {
		return real.Read(p)
	}
	return rr.Read(p)
}

// deterministicCryptoRand gives the run its stream of crypto/rand, seeded by the run's seed (installing the
// dispatcher if no run did before), registers the calling goroutine as the run's, and returns what ends the run's
// use of it.
func deterministicCryptoRand(seed uint64) (*runRand, func()) {
	rr := &runRand{r: randReader{r: rand.New(rand.NewPCG(0x63727970746f, 0x7a6b6d6f64656c^seed))}}
	installDispatcher.Do(func() {
		cryptoRuns.Lock()
		cryptoRuns.active, cryptoRuns.byG = map[*runRand]int{}, map[uint64]*runRand{}
		cryptoRuns.real = crand.Reader
		cryptoRuns.Unlock()
		crand.Reader = dispatchReader{}
	})
	cryptoRuns.Lock()
	cryptoRuns.active[rr] = 0
	cryptoRuns.Unlock()
	leave := rr.enter()
	return rr, func() {
		leave()
		cryptoRuns.Lock()
		defer cryptoRuns.Unlock()
		delete(cryptoRuns.active, rr)
	}
}

// enter registers the calling goroutine as one of the run's, until the returned function is called.
func (rr *runRand) enter() (leave func()) {
	if rr == nil {
		return func() {}
	}
	g := goroutineID()
	cryptoRuns.Lock()
	cryptoRuns.byG[g] = rr
	cryptoRuns.Unlock()
	return func() {
		cryptoRuns.Lock()
		delete(cryptoRuns.byG, g)
		cryptoRuns.Unlock()
	}
}

// goroutineID is the calling goroutine's number, from the first line of its stack ("goroutine 42 [...").
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) <= len(prefix) {
		return 0
	}
	b = b[len(prefix):]
	end := 0
	for end < len(b) && b[end] >= '0' && b[end] <= '9' {
		end++
	}
	id, _ := strconv.ParseUint(string(b[:end]), 10, 64)
	return id
}
