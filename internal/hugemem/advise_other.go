//go:build !linux

package hugemem

const adviceSupported = false

func alignOffset([]float32) int { return 0 }

func advise([]float32) {}
