package realzk

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// fourLetterTimeout bounds one four-letter-word exchange when ctx has no
// earlier deadline.
const fourLetterTimeout = 2 * time.Second

// FourLetter sends a ZooKeeper four-letter word (such as "srvr", "mntr",
// "ruok", "cons") to the server at addr and returns its whole answer. The
// server must allow the word (harness-started servers allow all of them unless
// Config.FourLetterWords says otherwise).
func FourLetter(ctx context.Context, addr, word string) (string, error) {
	if len(word) != 4 {
		return "", fmt.Errorf("four-letter word %q: must be exactly 4 letters, e.g. \"srvr\"", word)
	}
	ctx, cancel := context.WithTimeout(ctx, fourLetterTimeout)
	defer cancel()
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s to %s: %w", word, addr, err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(deadline); err != nil {
			return "", fmt.Errorf("%s to %s: set deadline: %w", word, addr, err)
		}
	}
	if _, err := io.WriteString(conn, word); err != nil {
		return "", fmt.Errorf("%s to %s: send: %w", word, addr, err)
	}
	answer, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("%s to %s: read: %w", word, addr, err)
	}
	return string(answer), nil
}

// Server modes as reported by "srvr".
const (
	ModeLeader     = "leader"
	ModeFollower   = "follower"
	ModeObserver   = "observer"
	ModeStandalone = "standalone"
)

// ServerMode asks the server at addr for its mode with "srvr" and returns
// "leader", "follower", "observer" or "standalone". A server that runs but is
// not serving (no quorum, election under way) yields an error saying so.
func ServerMode(ctx context.Context, addr string) (string, error) {
	st, err := ServerStatus(ctx, addr)
	return st.Mode, err
}

// Status is what a server's "srvr" answer says of it.
type Status struct {
	// Mode is "leader", "follower", "observer" or "standalone".
	Mode string
	// Zxid is the last transaction the server has applied to its tree.
	Zxid int64
}

// ServerStatus asks the server at addr for its mode and last applied zxid with "srvr". A server that runs but
// is not serving (no quorum, election under way) yields an error saying so.
func ServerStatus(ctx context.Context, addr string) (Status, error) {
	answer, err := FourLetter(ctx, addr, "srvr")
	if err != nil {
		return Status{}, err
	}
	return parseSrvr(addr, answer)
}

// parseSrvr reads the Mode and Zxid lines of a srvr answer from addr.
func parseSrvr(addr, answer string) (Status, error) {
	var st Status
	var haveZxid bool
	for line := range strings.SplitSeq(answer, "\n") {
		line = strings.TrimSpace(line)
		if mode, ok := strings.CutPrefix(line, "Mode:"); ok {
			st.Mode = strings.TrimSpace(mode)
		} else if z, ok := strings.CutPrefix(line, "Zxid:"); ok {
			n, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(z), "0x"), 16, 64)
			if err != nil {
				return Status{}, fmt.Errorf("srvr to %s: zxid %q: %w", addr, strings.TrimSpace(z), err)
			}
			st.Zxid, haveZxid = n, true
		}
	}
	if st.Mode != "" && haveZxid {
		return st, nil
	}
	answer = strings.TrimSpace(answer)
	if answer == "" {
		return Status{}, fmt.Errorf("srvr to %s: empty answer (the server closed the connection; is srvr in 4lw.commands.whitelist?)", addr)
	}
	return Status{}, fmt.Errorf("srvr to %s: no mode and zxid in answer: %q", addr, answer)
}
