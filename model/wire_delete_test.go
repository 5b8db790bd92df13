package model_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/model"
)

// TestWireDeleteOddPaths: a delete whose path has no '/' is BadArguments (and spends a zxid); other invalid
// paths look their parent up and find none, as on Debian's 3.8.0 (measured over a raw socket: "golden" and ""
// gave -8, "/a//b", "a/b" and "/nope" -101, each with the next zxid). Found by FuzzWireStream: the model
// panicked on the first two.
func TestWireDeleteOddPaths(t *testing.T) {
	srv := model.NewServer()
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := rawzk.Connect(ctx, []string{addr}, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var got []string
	for _, p := range []string{"golden", "", "/a//b", "a/b", "/nope"} {
		err := c.Delete(ctx, p, -1)
		switch {
		case errors.Is(err, zk.ErrBadArguments):
			got = append(got, fmt.Sprintf("%q -8", p))
		case errors.Is(err, zk.ErrNoNode):
			got = append(got, fmt.Sprintf("%q -101", p))
		default:
			got = append(got, fmt.Sprintf("%q %v", p, err))
		}
	}
	if want := `"golden" -8, "" -8, "/a//b" -101, "a/b" -101, "/nope" -101`; strings.Join(got, ", ") != want {
		t.Errorf("deletes: %s, want %s", strings.Join(got, ", "), want)
	}
}
