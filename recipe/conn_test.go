package recipe_test

import (
	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/recipe"
)

// The recipe runs unchanged on go-zookeeper.
var _ recipe.Conn = (*zk.Conn)(nil)
