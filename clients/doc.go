// Package clients runs real ZooKeeper clients in other languages — Curator's
// InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2,
// LeaderLatch and CuratorCache (Java; the cache and Curator's addWatch and
// removeWatches calls use persistent watches), kazoo's Lock, ReadLock and
// WriteLock, Semaphore and Election (Python) and zkCli.sh — against the
// model's wire server and against a real ZooKeeper 3.8, and checks that both
// give the same observable outcome: mutual exclusion, the lock recipes'
// sequence names and FIFO order; readers sharing the read-write lock and
// writers excluding everyone; never more semaphore holders than leases, and
// all leases taken at once; one leader at a time, each candidate leading
// once in the order of its election node; nothing left behind; zkCli's
// output and its watch events, also across a severed connection (zkCli
// re-registers its watches) and a lock holder's session expiry (kazoo). It
// also runs the zkmodel serve binary with a kazoo client that drives the
// control endpoint itself.
//
// The package has only tests; java/, python/ and zkcli/ hold the programs and
// the script they run. They need Debian's zookeeper, libcurator-recipes-java
// and python3-kazoo packages (make clientdeps installs them).
package clients
