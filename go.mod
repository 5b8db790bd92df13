module github.com/zkmodel/zkmodel

go 1.26

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/go-zookeeper/zk v1.0.4 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
