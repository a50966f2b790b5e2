//go:build race

package sandbox

// raceEnabled: the test binary, which the Sandbox tests run as a chart's
// child process, is built with the race detector, whose shadow memory
// counts against RLIMIT_DATA.
const raceEnabled = true
