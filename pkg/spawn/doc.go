// Package spawn starts child processes from OS threads that never exit.
//
// On Linux a child's parent-death signal (SysProcAttr.Pdeathsig, which
// docrepo sets so that a crashed process leaves no child holding its ports
// or running on) follows the thread that forked it, not the process: the
// kernel sends it when that thread exits. Go ends a thread when a goroutine
// locked to it (runtime.LockOSThread) returns without unlocking it
// (golang/go#27505; pkg/ocr's deskew does so on purpose, to drop a lowered
// thread priority with the thread), and that is the only way the runtime
// ends one of its threads. A child forked by an ordinary goroutine is
// forked on whichever thread that goroutine runs on at that moment, so any
// such goroutine, anywhere in the process and at any later time, can take
// the child down with its thread. Start forks every child on a thread of
// its own that is locked for good, so no thread exit other than the
// process's own reaches a child.
//
// The same thread gives a child a lower CPU priority without touching this
// process's: Linux keeps a nice value per thread, and a child inherits the
// value of the thread that forked it. One spawner thread serves each nice
// value asked for.
package spawn
