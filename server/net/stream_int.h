/*
 * What the transports (tcp.c, pipe.c) share and nothing else uses.
 */
#ifndef MP_STREAM_INT_H
#define MP_STREAM_INT_H

#include <uv.h>

/* libuv's connect callback for every transport: hands the status to the
 * stream's connect_cb (req->data is the stream). */
void mp__stream_on_connect(uv_connect_t *req, int status);

#endif
