/*
 * vx_exit.c - _exit for upstream Vortex's kernel SDK built with picolibc
 * (tests/upstream_sdk.cmake): picolibc's exit() ends in _exit(), which
 * upstream's newlib toolchain takes from libgloss; upstream's start code
 * (vx_start.S) defines _Exit, which writes the exit code and halts the
 * warp.  Added to both kernel libraries.
 */
void _Exit(int status) __attribute__((noreturn));
void _exit(int status) __attribute__((noreturn));

void _exit(int status) { _Exit(status); }
