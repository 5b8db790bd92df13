// Package term lets a command started by make or go run own Ctrl-C.
//
// Ctrl-C in a terminal sends SIGINT to the whole foreground process group: make and go run included, which
// then report "Interrupt" or exit 1 whatever the command itself does. Foreground moves the command into a
// process group of its own and gives it the terminal, so that Ctrl-C reaches only the command, which can shut
// down cleanly and exit 0, and make and go run exit with it.
package term

import (
	"os"
	"os/signal"
	"syscall"
	"unsafe"
)

// Foreground makes this process the terminal's foreground process group, in a group of its own, when
// standard input is a terminal, and returns what gives the terminal back (call it before exiting). Without
// a terminal it does nothing: signals then come from whoever started the process, as they should.
func Foreground() (restore func()) {
	tty := os.Stdin.Fd()
	var orig int32
	if ioctl(tty, syscall.TIOCGPGRP, &orig) != nil {
		return func() {}
	}
	signal.Ignore(syscall.SIGTTOU) // a background group may set the terminal's foreground only with this
	if err := syscall.Setpgid(0, 0); err != nil {
		return func() {}
	}
	own := int32(syscall.Getpgrp())
	if ioctl(tty, syscall.TIOCSPGRP, &own) != nil {
		return func() {}
	}
	return func() { _ = ioctl(tty, syscall.TIOCSPGRP, &orig) }
}

func ioctl(fd uintptr, req uintptr, pgrp *int32) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(unsafe.Pointer(pgrp))); errno != 0 {
		return errno
	}
	return nil
}
