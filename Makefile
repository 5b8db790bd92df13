# zkmodel — make targets. `make help` lists them.
GO       ?= go
PKGS     ?= ./...
SHELL    := /bin/bash

# Go's collector paced at 400% heap growth instead of 100% for everything make runs: a search drops much
# garbage (go-zookeeper's 1.5 MiB send buffer per client per run) over a small live heap, and at the default
# collects about once a run. What it saves and costs, measured: docs/scale.md.
# A GOGC from the environment or the command line wins.
GOGC     ?= 400
export GOGC

.PHONY: help test check prove traces replay ensemble real herd fidelity gozk bench bench-explore pct-table vet fmt zookeeper clientdeps serve

# Where make check writes the traces of what it finds: a git-ignored scratch directory, so that the main job
# never rewrites the committed corpus in traces/ (make traces does that, deliberately).
CHECK_TRACES ?= $(CURDIR)/out/traces

help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

zookeeper: ## install Debian's ZooKeeper 3.8 when it is missing (needs root)
	@if [ ! -f /usr/share/java/zookeeper.jar ]; then \
		echo "installing Debian's zookeeper package (ZooKeeper 3.8 and Java)…"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper >/dev/null; \
	fi
	@test -f /usr/share/java/zookeeper.jar || { echo "zookeeper.jar still missing: install Debian's zookeeper package, or set ZK_SERVERS=host:port,… to use your own ensemble"; exit 1; }

clientdeps: zookeeper ## install what the clients tests run when missing (needs root): javac, Curator 5.4, kazoo with pure-sasl
	@if [ ! -x /usr/bin/javac ] || [ ! -f /usr/share/java/curator-recipes.jar ] || ! /usr/bin/python3 -c 'import kazoo, puresasl' 2>/dev/null; then \
		echo "installing Debian's default-jdk-headless, libcurator-recipes-java, python3-kazoo and python3-pure-sasl…"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless libcurator-recipes-java python3-kazoo python3-pure-sasl >/dev/null; \
	fi
	@test -x /usr/bin/javac && test -f /usr/share/java/curator-recipes.jar && /usr/bin/python3 -c 'import kazoo, puresasl' || { echo "javac, Curator, kazoo or pure-sasl still missing: install Debian's default-jdk-headless, libcurator-recipes-java, python3-kazoo and python3-pure-sasl"; exit 1; }

serve: ## serve the model to clients in any language: make serve ADDR=127.0.0.1:2181 (prints the control endpoint)
	$(GO) run ./cmd/zkmodel serve -addr $(or $(ADDR),127.0.0.1:2181)$(if $(SEED), -seed $(SEED))

vet: ## gofmt, go vet and staticcheck
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: the files above need formatting (make fmt)"; exit 1; }
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK) $(PKGS)

STATICCHECK ?= v0.8.2

fmt: ## format every Go file in place (gofmt -w)
	gofmt -w $$(git ls-files '*.go')

bench: ## the benchmarks on the fake (model, recipe, check), as a table; BENCH=regexp picks some
	@$(GO) test -run '^$$' -bench '$(or $(BENCH),.)' -benchmem ./model ./recipe ./check \
		| awk 'BEGIN { printf "%-52s %12s %14s %12s %12s  %s\n", "benchmark", "runs", "ns/op", "B/op", "allocs/op", "other" } \
			/^Benchmark/ { other = ""; ns = b = a = "-"; \
				for (i = 3; i < NF; i += 2) { if ($$(i+1) == "ns/op") ns = $$i; else if ($$(i+1) == "B/op") b = $$i; else if ($$(i+1) == "allocs/op") a = $$i; else other = other $$i " " $$(i+1) "  " } \
				printf "%-52s %12s %14s %12s %12s  %s\n", $$1, $$2, ns, b, a, other } \
			/^(FAIL|panic)/ { print; failed = 1 } END { exit failed }'; exit $${PIPESTATUS[0]}

bench-explore: ## the checker's interleavings/s on one core, this tree against BASE, side by side: make bench-explore BASE=e4ea55a [ROUNDS=5] [GOZK_SEND_BUFFER=65536, a what-if]
	@GOZK_SEND_BUFFER=$(GOZK_SEND_BUFFER) scripts/bench-explore.sh $(or $(BASE),e4ea55a) $(or $(ROUNDS),5)

pct-table: ## docs/checker.md's PCT table: interleavings and time to each mutant's first failure, random against PCT (median of 10 seeds, one core)
	@echo "load average: $$(cut -d' ' -f1-3 /proc/loadavg), $$(nproc) cores"
	@$(GO) test -p 1 -count=1 -timeout 60m -run '^$$' -bench '^BenchmarkFirstFailure$$' -benchtime=1x ./check | grep -E '^(\||FAIL|panic)'; exit $${PIPESTATUS[0]}

test: zookeeper clientdeps vet ## run every test, the real-ensemble ones included
	$(GO) test -count=1 -timeout 20m $(PKGS)

check: ## the main job, on the fake: check the recipe and every mutant, print the table (N=10000 interleavings a row; a mutant's row stops at its first failure, within 50,000); traces go to out/traces
	@echo "make check: failure traces go to $(CHECK_TRACES)"
	$(GO) test -count=1 -timeout 60m -v -run '^TestCheckAll$$' ./check -check.n=$(or $(N),10000) -check.traces=$(CHECK_TRACES) -check.shrink=20s \
		| grep -v -E '^(=== RUN|=== NAME|\s+--- PASS|PASS$$)'; exit $${PIPESTATUS[0]}

prove: ## exhaustive search on the fake: every complete schedule of every primitive within the stated preemption bounds (2 clients with 2 preemptions, or 1 and a fault; 3 clients with 1), every mutant with its failing schedule (traces in out/prove)
	$(GO) test -count=1 -timeout 75m -v -run '^TestProve$$' ./check -check.prove -check.traces=$(CURDIR)/out/prove | grep -v -E '^(=== RUN|PASS$$)'; exit $${PIPESTATUS[0]}

# porcupine's HTML views of the corpus's safety and register traces: generated, so not committed.
TRACES_HTML ?= $(CURDIR)/out/traces-html

traces: ## regenerate the committed regression corpus in traces/ (what make check finds, shrunk), deliberately; porcupine's HTML views go to out/traces-html
	rm -f traces/*.trace traces/*.html
	$(MAKE) --no-print-directory check CHECK_TRACES=$(CURDIR)/traces
	@mkdir -p $(TRACES_HTML) && rm -f $(TRACES_HTML)/*.html
	@shopt -s nullglob; html=(traces/*.html); if (( $${#html[@]} )); then mv "$${html[@]}" $(TRACES_HTML)/; echo "porcupine's views: $(TRACES_HTML)"; fi

replay: ## replay a trace exactly and print it: make replay TRACE=traces/…
	@test -n "$(TRACE)" || { echo "usage: make replay TRACE=traces/<file>.trace"; exit 2; }
	@$(GO) test -count=1 -run '^TestReplay$$' ./check -check.replay=$(abspath $(TRACE)) -v \
		| grep -v -E '^(=== RUN|--- PASS|PASS$$|ok )'; exit $${PIPESTATUS[0]}

ensemble: zookeeper ## run a local 3-server ZooKeeper ensemble in the foreground, print ZK_SERVERS (Ctrl-C stops it)
	$(GO) run ./realzk/cmd/ensemble

real: zookeeper ## run the lock's validation scenarios on a real 3-server ensemble with faults, printing their figures
	$(GO) test -count=1 -timeout 10m -v -run 'Validate' ./realzk

herd: zookeeper clientdeps ## herd experiment: the mutexes (recipe, watch-parent, zk.Lock, Curator) with bystanders at N=10,50,200,500, then the read-write lock, semaphore and election (recipe, Curator, kazoo) at N=10,50 counted on the wire; 3 alternating rounds; writes out/herd/herd.html and herd.md
	$(GO) run ./realzk/cmd/herd $(if $(HERD_PRIMITIVES),-primitives $(HERD_PRIMITIVES)) $(if $(HERD_CLIENTS),-clients $(HERD_CLIENTS)) $(if $(HERD_PRIMITIVE_CLIENTS),-primitive-clients $(HERD_PRIMITIVE_CLIENTS)) $(if $(HERD_IMPLS),-impls $(HERD_IMPLS)) $(if $(HERD_DURATION),-duration $(HERD_DURATION)) $(if $(HERD_ROUNDS),-rounds $(HERD_ROUNDS)) $(if $(HERD_OUT),-out $(HERD_OUT))

fidelity: zookeeper ## compare the model with a real ensemble on N random operation sequences (N=500 by default)
	$(GO) test -count=1 -timeout 60m -v -run 'TestDifferential$$' ./differential -rapid.checks=$(or $(N),500) -rapid.nofailfile

gozk: zookeeper ## go-zookeeper v1.0.4's own integration suite on real ZooKeeper and on the stand-in (dropin/bin), as a table in out/gozk/suite.md
	@$(GO) test -count=1 -timeout 20m -v -run '^TestGoZookeeperSuite$$' ./clients/gozk -gozk.table=$(CURDIR)/out/gozk/suite.md $(if $(GOZK_SHARDS),-gozk.shards=$(GOZK_SHARDS)) $(if $(GOZK_STANDIN),-gozk.standin=$(GOZK_STANDIN)) \
		| grep -v -E '^(=== RUN|PASS$$)'; status=$${PIPESTATUS[0]}; test -f out/gozk/suite.md && cat out/gozk/suite.md; exit $$status
