# zkmodel — make targets. `make help` lists them.
GO       ?= go
PKGS     ?= ./...
SHELL    := /bin/bash

.PHONY: help test check replay ensemble real herd fidelity bench vet fmt zookeeper clientdeps serve

help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

zookeeper: ## install Debian's ZooKeeper 3.8 when it is missing (needs root)
	@if [ ! -f /usr/share/java/zookeeper.jar ]; then \
		echo "installing Debian's zookeeper package (ZooKeeper 3.8 and Java)…"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper >/dev/null; \
	fi
	@test -f /usr/share/java/zookeeper.jar || { echo "zookeeper.jar still missing: install Debian's zookeeper package, or set ZK_SERVERS=host:port,… to use your own ensemble"; exit 1; }

clientdeps: zookeeper ## install what the clients tests run when missing (needs root): javac, Curator 5.4, kazoo
	@if [ ! -x /usr/bin/javac ] || [ ! -f /usr/share/java/curator-recipes.jar ] || ! /usr/bin/python3 -c 'import kazoo' 2>/dev/null; then \
		echo "installing Debian's default-jdk-headless, libcurator-recipes-java and python3-kazoo…"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless libcurator-recipes-java python3-kazoo >/dev/null; \
	fi
	@test -x /usr/bin/javac && test -f /usr/share/java/curator-recipes.jar && /usr/bin/python3 -c 'import kazoo' || { echo "javac, Curator or kazoo still missing: install Debian's default-jdk-headless, libcurator-recipes-java and python3-kazoo"; exit 1; }

serve: ## serve the model to clients in any language: make serve ADDR=127.0.0.1:2181 (prints the control endpoint)
	$(GO) run ./cmd/zkmodel serve -addr $(or $(ADDR),127.0.0.1:2181)$(if $(SEED), -seed $(SEED))

vet: ## gofmt and go vet
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: the files above need formatting"; exit 1; }
	$(GO) vet $(PKGS)

test: zookeeper clientdeps vet ## run every test, the real-ensemble ones included
	$(GO) test -count=1 -timeout 20m $(PKGS)

check: ## the main job, on the fake: check the recipe and every mutant, print the table (N=10000 interleavings)
	$(GO) test -count=1 -timeout 60m -v -run '^TestCheckAll$$' ./check -check.n=$(or $(N),10000) -check.traces=$(CURDIR)/traces -check.shrink=20s \
		| grep -v -E '^(=== RUN|=== NAME|\s+--- PASS|PASS$$)'; exit $${PIPESTATUS[0]}

replay: ## replay a trace exactly and print it: make replay TRACE=traces/…
	@test -n "$(TRACE)" || { echo "usage: make replay TRACE=traces/<file>.trace"; exit 2; }
	@$(GO) test -count=1 -run '^TestReplay$$' ./check -check.trace=$(abspath $(TRACE)) -v \
		| grep -v -E '^(=== RUN|--- PASS|PASS$$|ok )'; exit $${PIPESTATUS[0]}

ensemble: zookeeper ## run a local 3-server ZooKeeper ensemble in the foreground, print ZK_SERVERS (Ctrl-C stops it)
	$(GO) run ./realzk/cmd/ensemble

real: zookeeper ## run the lock's validation scenarios on a real 3-server ensemble with faults, printing their figures
	$(GO) test -count=1 -timeout 10m -v -run 'Validate' ./realzk

herd: zookeeper ## herd experiment: recipe vs parent-watching lock vs zk.Lock for N=10,50,200,500; prints a table, writes an SVG plot
	$(GO) run ./realzk/cmd/herd $(if $(HERD_CLIENTS),-clients $(HERD_CLIENTS)) $(if $(HERD_DURATION),-duration $(HERD_DURATION)) $(if $(HERD_OUT),-out $(HERD_OUT))

fidelity: zookeeper ## compare the model with a real ensemble on N random operation sequences (N=500 by default)
	$(GO) test -count=1 -timeout 60m -v -run 'TestDifferential$$' ./differential -rapid.checks=$(or $(N),500) -rapid.nofailfile
