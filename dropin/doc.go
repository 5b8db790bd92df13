// Package dropin lets harnesses that start ZooKeeper with zkServer.sh run on zkmodel unchanged.
//
// dropin/bin/zkServer.sh is a stand-in for ZooKeeper's script: point a harness's ZooKeeper bin directory
// at it (go-zookeeper's integration suite: ZOOKEEPER_BIN_PATH=<repo>/dropin/bin). `zkServer.sh
// start-foreground zoo.cfg` execs `zkmodel zkserver start-foreground zoo.cfg`, which reads the
// configuration (LoadConfig) and runs that server as one member of an emulated ensemble (model.WithEnsemble)
// shared by every process of the same cluster: the servers whose zoo.cfg files have the same server.N lines.
//
// LoadConfig accepts what ZooKeeper 3.8 accepts and refuses what it refuses (TestStandInStartsAsReal, in
// package clients, starts Debian's zkServer.sh and the stand-in from the same files): a JAAS file without the
// server's section gives a server without SASL, a JAAS file that cannot be read or parsed is ErrCannotStart
// (the command exits 1), a configuration 3.8 refuses is an error naming the file and line (exit 2).
//
// The ensemble lives in a daemon, one per cluster, that the first member's process starts (detached, its
// output in a log file) under a file lock. Each member's process holds a unix socket open to it; when the
// process ends, killed with SIGKILL or not, the daemon stops that member at once: its client connections
// close and its port refuses, and without a majority no member serves. Running the process again starts the
// member again with the ensemble's state, as a real server recovers from its dataDir, and with the settings
// its zoo.cfg, JVM flags and JAAS file give now, read afresh as a real server reads them on each start (a new
// JAAS file's users log in, the old ones' no more). The emulated ensemble has one set of settings: a member
// whose settings differ from those of members still running is refused, with an error saying so, as is a
// tickTime other than the one the cluster's daemon started with. Sessions expire on
// the wall clock: the daemon moves the model's virtual clock along with it.
//
// go-zookeeper's integration suite runs on the stand-in and on Debian's ZooKeeper side by side in package
// clients/gozk (make gozk).
//
// The daemon exits once no member's process is left and either every dataDir its members named has been
// removed (a test's temporary directory, say) or the linger time has passed since the last one left
// (ZKMODEL_LINGER, a Go duration, 30s by default): within that window a cluster whose processes were all
// stopped comes back with its data.
package dropin
