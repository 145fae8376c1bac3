/* The HTTP side of zeroth serve: libmicrohttpd (Debian's libmicrohttpd-dev)
 * answering each request with zt_serve_handle on its own thread. Request
 * bodies over the server's max_body are refused with 413 before they are
 * read whole. Without libmicrohttpd at build time the functions here say so
 * (zt_serve_http_available). The caller owns the listener
 * (zt_serve_http_stop) and the server, which must outlive it. */
#ifndef ZT_SERVE_HTTP_H
#define ZT_SERVE_HTTP_H

#include <stdbool.h>

#include "core/status.h"
#include "serve/serve.h"

typedef struct zt_serve_http zt_serve_http;

/* Whether this build has the HTTP server. */
bool zt_serve_http_available(void);

/* Listens on host (a numeric IPv4 or IPv6 address) and port (0: a free
 * one the system picks) and serves srv from a thread per connection.
 * Errors: "cannot listen on 127.0.0.1:8080: Address already in use", a host
 * that is no address, ZT_ERR_UNSUPPORTED without libmicrohttpd. */
zt_status zt_serve_http_start(zt_serve *srv, const char *host, int port, zt_serve_http **out);

/* The port listened on (the one picked when 0 was asked). */
int zt_serve_http_port(const zt_serve_http *h);

/* Stops listening, waits for the requests in flight and frees h. */
void zt_serve_http_stop(zt_serve_http *h);

#endif
