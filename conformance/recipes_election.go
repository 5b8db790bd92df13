package conformance

import (
	"context"
	"errors"
	"regexp"
	"testing"

	"github.com/zkmodel/zkmodel/recipe"
)

// candidateName is Curator's LeaderLatch node name, with the recipe's 32-digit ids.
var candidateName = regexp.MustCompile(`^_c_[0-9a-f]{32}-latch-[0-9]{10}$`)

func campaignAsync(ctx context.Context, e *recipe.Election, value string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- e.Campaign(ctx, []byte(value)) }()
	return done
}

func mustResign(t testing.TB, e *recipe.Election) {
	t.Helper()
	if err := e.Resign(guard(t)); err != nil {
		t.Fatalf("Resign: %v", err)
	}
}

// wantLeader fails the test unless Leader, asked through e, names value.
func wantLeader(t testing.TB, e *recipe.Election, value string) {
	t.Helper()
	got, err := e.Leader(guard(t))
	if err != nil || string(got) != value {
		t.Fatalf("Leader() = %q, %v; want %q", got, err, value)
	}
}

// testElectionSuccession: three candidates in turn; the first leads, the others wait in
// line; each resignation hands leadership to the next in line with a larger token, and
// Leader names the leader through any session.
func testElectionSuccession(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	names := []string{"alpha", "beta", "gamma"}
	es, conns := make([]*recipe.Election, len(names)), make([]recipe.Conn, len(names))
	for i := range es {
		conns[i], _ = env.Connect(t)
		es[i] = recipe.NewElection(watchConn(t, conns[i]), dir)
	}
	if _, err := es[0].Leader(guard(t)); !errors.Is(err, recipe.ErrNoLeader) {
		t.Fatalf("Leader() before any campaign: %v, want recipe.ErrNoLeader", err)
	}
	if err := es[0].Campaign(guard(t), []byte(names[0])); err != nil {
		t.Fatalf("first Campaign: %v", err)
	}
	if name := es[0].Path()[len(dir)+1:]; !candidateName.MatchString(name) {
		t.Fatalf("election node %s, want a name matching %s", es[0].Path(), candidateName)
	}
	done := make([]<-chan error, len(names))
	for i := 1; i < len(names); i++ {
		done[i] = campaignAsync(guard(t), es[i], names[i])
		waitLockNodes(t, conns[0], dir, i+1)
	}
	token := es[0].Token()
	for i := range names {
		if i > 0 {
			if err := result(t, done[i]); err != nil {
				t.Fatalf("%s's Campaign: %v", names[i], err)
			}
			if es[i].Token() <= token {
				t.Fatalf("%s's token %d is not above its predecessor's %d", names[i], es[i].Token(), token)
			}
			token = es[i].Token()
		}
		for j := i + 1; j < len(names); j++ {
			notYet(t, done[j], names[j]+"'s Campaign while "+names[i]+" leads")
		}
		wantLeader(t, es[i], names[i])
		// Another session's server may lag behind the handover for a while, never for good.
		eventually(t, "Leader() through another session to name "+names[i], func() bool {
			got, err := es[len(es)-1].Leader(guard(t))
			return err == nil && string(got) == names[i]
		})
		mustResign(t, es[i])
	}
	// Asked through the session that resigned last: another session's server may lag behind.
	if _, err := es[len(es)-1].Leader(guard(t)); !errors.Is(err, recipe.ErrNoLeader) {
		t.Fatalf("Leader() after everyone resigned: %v, want recipe.ErrNoLeader", err)
	}
}

// testElectionLeaderExpiry: the leader's session expires: its Lost() closes, the next
// candidate leads with a larger token, and the old leader's Resign says it had lost.
func testElectionLeaderExpiry(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	connA, _ := env.Connect(t)
	connB, _ := env.Connect(t)
	a := recipe.NewElection(watchConn(t, connA), dir)
	b := recipe.NewElection(watchConn(t, connB), dir)
	if err := a.Campaign(guard(t), []byte("a")); err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	lost, tokenA := a.Lost(), a.Token()
	done := campaignAsync(guard(t), b, "b")
	waitLockNodes(t, connA, dir, 2)
	env.Expire(t, connA)
	await(t, lost, "the expired leader's Lost() to close")
	if err := result(t, done); err != nil {
		t.Fatalf("the next candidate's Campaign: %v", err)
	}
	if b.Token() <= tokenA {
		t.Fatalf("the new leader's token %d is not above the expired leader's %d", b.Token(), tokenA)
	}
	wantLeader(t, b, "b")
	if err := a.Resign(guard(t)); !errors.Is(err, recipe.ErrLost) {
		t.Fatalf("the expired leader's Resign: %v, want an error wrapping recipe.ErrLost", err)
	}
	mustResign(t, b)
}

// testElectionWithdraw: a candidate that stops campaigning (its context cancelled) leaves
// the line without a trace, and the one behind it follows the leader directly.
func testElectionWithdraw(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	conns := make([]recipe.Conn, 3)
	es := make([]*recipe.Election, 3)
	for i := range es {
		conns[i], _ = env.Connect(t)
		es[i] = recipe.NewElection(watchConn(t, conns[i]), dir)
	}
	if err := es[0].Campaign(guard(t), []byte("leader")); err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	ctx, cancel := context.WithCancel(guard(t))
	withdrawn := campaignAsync(ctx, es[1], "withdrawn")
	waitLockNodes(t, conns[0], dir, 2)
	last := campaignAsync(guard(t), es[2], "last")
	waitLockNodes(t, conns[0], dir, 3)
	cancel()
	if err := result(t, withdrawn); !errors.Is(err, context.Canceled) {
		t.Fatalf("withdrawn Campaign: %v, want context.Canceled", err)
	}
	waitLockNodes(t, conns[1], dir, 2)
	notYet(t, last, "the last candidate's Campaign while the leader leads")
	mustResign(t, es[0])
	if err := result(t, last); err != nil {
		t.Fatalf("the last candidate's Campaign: %v", err)
	}
	wantLeader(t, es[2], "last")
	if err := es[2].Campaign(guard(t), nil); !errors.Is(err, recipe.ErrLocked) {
		t.Fatalf("Campaign while leading: %v, want recipe.ErrLocked", err)
	}
	mustResign(t, es[2])
}
