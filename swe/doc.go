// Package swe holds the rules of repository tasks (SWE-bench-style rows):
// the instance a row's ground truth names, the patch in a response, the
// evaluation script, the test logs' parsers and the grading. It follows
// SWE-bench v4.1.0 by default and v5's rules on request (Rules), and runs
// nothing itself: the sandbox runs the script in the instance's image and
// hands the log back here.
package swe
