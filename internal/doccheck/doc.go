// Package doccheck holds only a test: it checks that the relative links and
// path references of the repository's documentation resolve. It reads
// README.md, docs/*.md and the comments of configs/*.yaml, and fails on a
// markdown link to a file or directory that does not exist, on an anchor
// (path#section) that names no heading of its target, and on a path to a
// file of the repository (docs/training.md, scripts/serve_vllm.sh, ...)
// that is not there. Web links are not fetched.
package doccheck
