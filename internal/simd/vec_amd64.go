package simd

// haveAsm reports whether the AVX2 and AVX-512 levels run assembly (on
// other architectures they run the portable code).
const haveAsm = true
