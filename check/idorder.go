package check

import (
	"fmt"
	"slices"

	"github.com/zkmodel/zkmodel/check/shard"
)

// This file is Config.NodeIDOrders: the exhaustive search run once for every order of the clients' node ids.
// RandFor gives each client a stream of ids of its own (keyed by its number and the run's seed, which is 0 in
// the exhaustive search), so one search sees the clients' names in one order only. A lock that orders its
// nodes by name rather than by sequence number can pass in that order and fail in another; permuting which
// client draws which stream (Config.idStreams) covers every order.

// idOrders is every order of 1…k, in lexicographic order: the clients' own order (1 2 … k) first.
func idOrders(k int) [][]int {
	order := make([]int, k)
	for i := range order {
		order[i] = i + 1
	}
	out := [][]int{slices.Clone(order)}
	for {
		// The next permutation: the longest non-increasing suffix, its pivot swapped with the smallest
		// larger element of it, the suffix reversed.
		i := k - 2
		for i >= 0 && order[i] >= order[i+1] {
			i--
		}
		if i < 0 {
			return out
		}
		j := k - 1
		for order[j] <= order[i] {
			j--
		}
		order[i], order[j] = order[j], order[i]
		slices.Reverse(order[i+1:])
		out = append(out, slices.Clone(order))
	}
}

// idStreamsOf is Config.idStreams for an order: client i+1 draws the ids of client order[i].
func idStreamsOf(order []int) [maxOrderedClients]uint8 {
	var streams [maxOrderedClients]uint8
	for i, s := range order {
		streams[i] = uint8(s)
	}
	return streams
}

// withIDOrder is c with client i+1 drawing the ids of client order[i].
func (c Config) withIDOrder(order []int) Config {
	c.idStreams = idStreamsOf(order)
	return c
}

// idOrder is the order c's clients draw their ids in (client i+1 those of client order[i]), or nil when each
// draws its own (c.idStreams unset, or set to the clients' own order).
func (c Config) idOrder() []int {
	var order []int
	own := true
	for i, s := range c.idStreams {
		if s == 0 {
			break
		}
		order = append(order, int(s))
		own = own && int(s) == i+1
	}
	if own {
		return nil
	}
	return order
}

// factorial is k! (k at most maxOrderedClients).
func factorial(k int) int {
	f := 1
	for i := 2; i <= k; i++ {
		f *= i
	}
	return f
}

// validIDOrders says why Config.NodeIDOrders (or -check.idorders) cannot apply to this exploration, if it
// cannot: it is a way of the exhaustive search, of the model's own clients, of a whole search.
func validIDOrders(cfg Config, kind clients, strategy Strategy, part shard.Part) error {
	if !cfg.NodeIDOrders {
		return nil
	}
	switch strategy.(type) {
	case replayStrategy: // a trace records the order its run drew the ids in: the replay takes that one
		return nil
	case exhaustiveStrategy:
	default:
		return fmt.Errorf("check: %s: Config.NodeIDOrders (-check.idorders) is for the exhaustive search (Config.Exhaustive or -check.strategy=exhaustive), and this search is %s: a sampling search draws a seed for every run, and with it the order of the clients' node ids", cfg.Name, strategy)
	}
	if kind.name == wireKind {
		return fmt.Errorf("check: %s: Config.NodeIDOrders (-check.idorders) works with Run only, not RunZK: go-zookeeper names its protected nodes from crypto/rand, which RunZK makes one stream per run read in schedule order, not a stream per client whose order could be permuted", cfg.Name)
	}
	if cfg.Clients > maxOrderedClients {
		return fmt.Errorf("check: %s: Config.NodeIDOrders (-check.idorders) with %d clients would be %d! searches of the bound: at most %d clients (%d orders)", cfg.Name, cfg.Clients, cfg.Clients, maxOrderedClients, factorial(maxOrderedClients))
	}
	if !part.Whole() || *flagReport != "" {
		return fmt.Errorf("check: %s: Config.NodeIDOrders (-check.idorders) searches the whole bound once per order of the node ids in this process: it does not take -check.shard or -check.report", cfg.Name)
	}
	return nil
}

// everyIDOrder is the exhaustive search (exhaustive) once for every order of the clients' node ids, in
// idOrders' order: the counts summed over the orders searched, and the first failure in (order, tree order),
// found with the order's ids (its outcome records the order, for the trace). A failure, or the budget running
// out, stops it at that order.
func (x *exploration) everyIDOrder() (Report, *outcome) {
	orders := idOrders(x.cfg.Clients)
	var sum Report
	for i, order := range orders {
		one := *x
		one.cfg = x.cfg.withIDOrder(order)
		rep, fail := one.exhaustive()
		if i == 0 {
			sum = rep
		} else {
			sum.Schedules += rep.Schedules
			sum.Pruned += rep.Pruned
			sum.DecisionPoints += rep.DecisionPoints
			sum.States += rep.States
			sum.Runs += rep.Runs
			sum.shared = sum.shared || rep.shared
			sum.Exhausted = rep.Exhausted
			sum.Failed, sum.Property, sum.Verdict, sum.Decisions = rep.Failed, rep.Property, rep.Verdict, rep.Decisions
			sum.FailIndex, sum.FirstFail = rep.FailIndex, rep.FirstFail
			sum.failSchedules, sum.failPruned, sum.failPoints, sum.shrinkRuns = rep.failSchedules, rep.failPruned, rep.failPoints, rep.shrinkRuns
		}
		sum.IDOrders, sum.idClients = len(orders), x.cfg.Clients
		sum.IDOrdersSearched = i + 1
		if fail != nil || !rep.Exhausted {
			if fail != nil {
				sum.IDOrder = order
			}
			return sum, fail
		}
	}
	return sum, nil
}

// idOrdersText is how a report of a search of every order of the node ids says so: "in every order of the 2
// clients' node ids (2! = 2 orders)", with how many of them were searched when a failure or the budget
// stopped it, and the failing order.
func idOrdersText(r Report) string {
	text := fmt.Sprintf("in every order of the %d clients' node ids (%d! = %d orders)", r.idClients, r.idClients, r.IDOrders)
	if r.IDOrdersSearched < r.IDOrders {
		text = fmt.Sprintf("in %d of the %d orders of the %d clients' node ids", r.IDOrdersSearched, r.IDOrders, r.idClients)
	}
	if r.IDOrder != nil {
		text += fmt.Sprintf(", failing with the order %s", idOrderText(r.IDOrder))
	}
	return text
}
