package model_test

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
)

// Example uses the model the way a plain Go test would use a real ZooKeeper through go-zookeeper: connect,
// create nodes, leave a watch, and receive the event. With the default transport the event is on its channel
// by the time the call that fired it returns.
func Example() {
	srv := model.NewServer()
	conn, _, err := srv.Connect(10 * time.Second) // conn has the methods of *zk.Conn
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()

	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create("/app", nil, zk.FlagPersistent, acl); err != nil {
		fmt.Println(err)
		return
	}
	exists, _, watch, err := conn.ExistsW("/app/ready")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ready before:", exists)

	path, err := conn.Create("/app/worker-", []byte("w1"), zk.FlagEphemeralSequential, acl)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created", path)
	if _, err := conn.Create("/app/ready", nil, zk.FlagPersistent, acl); err != nil {
		fmt.Println(err)
		return
	}
	ev := <-watch
	fmt.Println("event:", ev.Type, ev.Path)
	// Output:
	// ready before: false
	// created /app/worker-0000000000
	// event: EventNodeCreated /app/ready
}
