// Package asm holds the avo programs that generate the assembly of package
// simd. It is a module of its own so that the main module does not depend on
// avo; the generated .s files are committed, and `go generate
// ./internal/simd` regenerates them.
package asm
