//go:build !race

package job

const raceDetector = false
