/*
 * vxp_io.h - whole reads and writes on a descriptor (a frame on a socket
 * or a pipe, a file's bytes), retried after EINTR and short counts: the
 * one such loop every program of the project uses.
 *
 * THREAD NOTES: any thread; the descriptor is the caller's.
 */
#ifndef VXP_IO_H
#define VXP_IO_H

#include <stddef.h>

/* vxp_write_full flag: send(2) with MSG_NOSIGNAL, so a peer that went
 * away is -EPIPE and not a SIGPIPE (a library must not take the signal
 * from its caller); fd must be a socket. */
#define VXP_IO_NOSIGNAL 1

/* Reads exactly n bytes of fd into buf.  Returns 0, -EPIPE when the file
 * or stream ended first (the bytes before it are in buf), or a negative
 * errno. */
int vxp_read_full(int fd, void *buf, size_t n);

/* Writes the n bytes of buf to fd (flags: 0 or VXP_IO_NOSIGNAL).
 * Returns 0 or a negative errno (-EIO for a write that wrote nothing). */
int vxp_write_full(int fd, const void *buf, size_t n, int flags);

#endif /* VXP_IO_H */
