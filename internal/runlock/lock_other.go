//go:build !unix && !windows

package runlock

import (
	"errors"
	"os"
)

// Systems without file locks (wasip1, plan9) get no exclusion.
var errWouldBlock = errors.New("unreachable")

func lockFile(*os.File) error   { return nil }
func unlockFile(*os.File) error { return nil }
