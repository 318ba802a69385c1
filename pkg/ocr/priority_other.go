//go:build !linux

package ocr

func lowerPriority(pid, nice int) {}

func lowerThreadPriority(nice int) {}
