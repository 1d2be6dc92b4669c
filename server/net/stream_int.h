/*
 * What the transports built on libuv streams (tcp.c, pipe.c) share
 * (uvstream.c), and nothing else uses: the stream ops that are the same
 * for both, and the callbacks libuv calls.
 */
#ifndef MP_STREAM_INT_H
#define MP_STREAM_INT_H

#include <uv.h>

#include "stream.h"

int mp__uv_read_start(mp_stream *s, mp_stream_alloc_cb alloc,
                      mp_stream_read_cb read);
int mp__uv_read_stop(mp_stream *s);
int mp__uv_try_write(mp_stream *s, const uv_buf_t *bufs, unsigned n);
int mp__uv_write(mp_stream *s, uv_write_t *req, const uv_buf_t *bufs,
                 unsigned n, uv_write_cb cb);
size_t mp__uv_queued(const mp_stream *s);
int mp__uv_shutdown(mp_stream *s, uv_shutdown_t *req, uv_shutdown_cb cb);

/* libuv's close callback: runs the stream's close_cb. */
void mp__uv_on_close(uv_handle_t *h);
/* The handle's descriptor (uv_fileno). */
int mp__uv_fileno(const mp_stream *s, uv_os_fd_t *fd);

/* libuv's connect callback for every transport: hands the status to the
 * stream's connect_cb (req->data is the stream). */
void mp__stream_on_connect(uv_connect_t *req, int status);

#endif
