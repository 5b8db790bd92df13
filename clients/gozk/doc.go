// Package gozk runs go-zookeeper v1.0.4's own integration suite (its TestIntegration_* tests, which start
// servers with $ZOOKEEPER_BIN_PATH/zkServer.sh) on Debian's ZooKeeper 3.8 and on zkmodel's stand-in
// (dropin/bin/zkServer.sh), side by side, and checks that every test that passes on the real server passes on
// the stand-in (`make gozk` prints the table). It is one of the clients' fidelity tests (see package clients
// and docs/fidelity.md), in a package of its own so that its test binary has a timeout of its own.
//
// The package has only tests.
package gozk
