module github.com/zkmodel/zkmodel

go 1.25.3

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/go-zookeeper/zk v1.0.4
	github.com/pavlo-v-chernykh/keystore-go/v4 v4.5.0
	pgregory.net/rapid v1.3.0
	software.sslmate.com/src/go-pkcs12 v0.7.4
)

require golang.org/x/crypto v0.11.0 // indirect
