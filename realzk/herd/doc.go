// Package herd is the herd experiment on a real ZooKeeper ensemble (package
// realzk starts it): what a lock's waiters cost everyone else.
//
// Run (cmd/herd, make herd) measures, for each N, N sessions contending with
// zero hold time for the recipe, check's parent-watching mutant,
// go-zookeeper's zk.Lock and Curator's InterProcessMutex (a JVM driver,
// java/HerdCurator.java, compiled against Debian's Curator at run time), in
// alternating rounds, while bystander sessions do unrelated work at a fixed
// offered rate and the servers are read with mntr. Then, for the read-write
// lock, the semaphore and leader election (Primitives), N sessions contend in
// package recipe's implementation, Curator's (InterProcessReadWriteLock,
// InterProcessSemaphoreV2, LeaderLatch) and kazoo's (ReadLock/WriteLock,
// Semaphore, Election: a Python driver, python/herd_kazoo.py, speaking the
// Java driver's protocol), every contender's connection through a counting
// proxy (realzk.CountWire), which gives requests per acquisition and
// wake-ups per release alike for all three. Cell holds one cell's figures;
// FormatMarkdown, HTML and Plots render them.
package herd
