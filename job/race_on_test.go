//go:build race

package job

// raceDetector: test.sh runs the real-corpus tests once more without it.
const raceDetector = true
