package core

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"
)

// validatePath applies ZooKeeper's path rules (the same ones go-zookeeper checks before sending, and the server
// checks again): absolute, no empty segment, no "." or ".." segment, no trailing slash (except that a
// sequential create may end in "/"), and none of the characters ZooKeeper reserves. Like go-zookeeper it
// returns the bare zk.ErrInvalidPath, which callers compare with ==; pathProblem says what is wrong.
func validatePath(path string, sequential bool) error {
	if pathProblem(path, sequential) != "" {
		return zk.ErrInvalidPath
	}
	return nil
}

// pathProblem returns which rule the path breaks, or "".
func pathProblem(path string, sequential bool) string {
	if path == "" {
		return "is empty; paths are absolute, like /app/lock"
	}
	if path[0] != '/' {
		return "does not start with /"
	}
	if len(path) == 1 {
		return ""
	}
	if !sequential && path[len(path)-1] == '/' {
		return "ends with /"
	}
	for i, w := 1, 0; i < len(path); i += w {
		r, width := utf8.DecodeRuneInString(path[i:])
		w = width
		switch {
		case r == 0:
			return "contains a NUL character"
		case r == '/' && path[i-1] == '/':
			return "has an empty segment (//)"
		case r == '.':
			start := strings.LastIndexByte(path[:i], '/') + 1
			end := strings.IndexByte(path[i:], '/')
			if end < 0 {
				end = len(path)
			} else {
				end += i
			}
			if seg := path[start:end]; seg == "." || seg == ".." {
				return "has a relative segment (" + seg + ")"
			}
		case r <= 0x1f, r >= 0x7f && r <= 0x9f, r >= 0xf000 && r <= 0xf8ff, r >= 0xfff0 && r < 0xffff:
			return fmt.Sprintf("contains the reserved character %U", r)
		}
	}
	return ""
}

// parentOf returns the parent of a valid, non-root path ("/" for top-level nodes).
func parentOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i == 0 {
		return "/"
	}
	return path[:i]
}

// baseName returns the last segment of a valid, non-root path.
func baseName(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}

// childPath joins a parent path and a child name.
func childPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
