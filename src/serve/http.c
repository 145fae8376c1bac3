/* zeroth serve's HTTP listener over libmicrohttpd. The socket is bound
 * here, not by libmicrohttpd, so that a port in use or a bad address comes
 * back as the system's own words. */
#include "serve/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

#ifdef ZT_HAVE_MICROHTTPD

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

/* Connections at once (a thread each); past it libmicrohttpd refuses. */
#define MAX_CONNECTIONS 128
/* Seconds a connection may stay silent before it is closed. */
#define CONNECTION_TIMEOUT 60

struct zt_serve_http {
    zt_serve *srv;
    struct MHD_Daemon *daemon;
    int port;
};

/* One request's body as it arrives. */
typedef struct request {
    char *body;
    size_t len;
    bool too_large; /* over max_body: the rest is read and dropped, then 413 */
} request;

bool zt_serve_http_available(void)
{
    return true;
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, zt_serve_reply *r)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        zt_serve_reply_free(r);
        return MHD_NO;
    }
    r->body = NULL; /* the response frees it */
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    /* The page loads nothing from anywhere: inline style and script, and
     * requests only to this server. */
    if (strncmp(r->content_type, "text/html", 9) == 0)
        MHD_add_response_header(resp, "Content-Security-Policy",
                                "default-src 'none'; style-src 'unsafe-inline'; script-src "
                                "'unsafe-inline'; connect-src 'self'; img-src data:");
    if (r->allow) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result refuse(struct MHD_Connection *conn, int status, const char *message)
{
    zt_serve_reply r;
    zt_serve_error_reply(status, message, &r);
    return send_reply(conn, &r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    zt_serve_http *h = cls;
    size_t max_body = zt_serve_get_config(h->srv)->max_body;
    request *rq = *con_cls;
    char msg[128];
    if (!rq) {
        /* First call, headers only: a declared length over the bound is
         * refused before any of the body is read. */
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > max_body) {
            snprintf(msg, sizeof msg, "request body over %zu bytes", max_body);
            return refuse(conn, 413, msg);
        }
        rq = zt_xcalloc(1, sizeof *rq);
        *con_cls = rq;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (!rq->too_large && rq->len + *upload_size > max_body) {
            rq->too_large = true;
            free(rq->body);
            rq->body = NULL;
            rq->len = 0;
        }
        if (!rq->too_large) {
            rq->body = zt_xrealloc(rq->body, rq->len + *upload_size + 1);
            memcpy(rq->body + rq->len, upload, *upload_size);
            rq->len += *upload_size;
            rq->body[rq->len] = '\0';
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (rq->too_large) {
        snprintf(msg, sizeof msg, "request body over %zu bytes", max_body);
        return refuse(conn, 413, msg);
    }
    const char *session = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "session");
    zt_serve_reply r;
    zt_serve_handle(h->srv, method, url, session, rq->body, rq->len, &r);
    return send_reply(conn, &r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    request *rq = *con_cls;
    if (!rq) return;
    free(rq->body);
    free(rq);
    *con_cls = NULL;
}

/* A listening socket on host:port; -1 with the message set. */
static zt_status listen_on(const char *host, int port, int *fd_out, int *port_out)
{
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
    char port_text[16];
    snprintf(port_text, sizeof port_text, "%d", port);
    int rc = getaddrinfo(host, port_text, &hints, &ai);
    if (rc != 0 || !ai)
        return zt_fail(ZT_ERR_INVALID, "serve: host '%s' is not a numeric IP address (%s)", host,
                       gai_strerror(rc));
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    zt_status st = ZT_OK;
    if (fd < 0) {
        st = zt_fail(ZT_ERR_IO, "serve: socket: %s", strerror(errno));
    } else {
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (ai->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0)
            st = zt_fail(ZT_ERR_IO, "serve: cannot listen on %s%s%s:%d: %s",
                         ai->ai_family == AF_INET6 ? "[" : "", host,
                         ai->ai_family == AF_INET6 ? "]" : "", port, strerror(errno));
    }
    if (st == ZT_OK) {
        struct sockaddr_storage sa;
        socklen_t len = sizeof sa;
        if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
            st = zt_fail(ZT_ERR_IO, "serve: getsockname: %s", strerror(errno));
        else if (sa.ss_family == AF_INET6)
            *port_out = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
        else
            *port_out = ntohs(((struct sockaddr_in *)&sa)->sin_port);
    }
    freeaddrinfo(ai);
    if (st != ZT_OK) {
        if (fd >= 0) close(fd);
        return st;
    }
    *fd_out = fd;
    return ZT_OK;
}

zt_status zt_serve_http_start(zt_serve *srv, const char *host, int port, zt_serve_http **out)
{
    *out = NULL;
    if (port < 0 || port > 65535)
        return zt_fail(ZT_ERR_INVALID, "serve: port %d is outside [0, 65535]", port);
    int fd = -1, bound = 0;
    ZT_TRY(listen_on(host, port, &fd, &bound));
    zt_serve_http *h = zt_xcalloc(1, sizeof *h);
    h->srv = srv;
    h->port = bound;
    h->daemon = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL,
        NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
    if (!h->daemon) {
        close(fd);
        free(h);
        return zt_fail(ZT_ERR_IO, "serve: libmicrohttpd could not start on %s:%d", host, bound);
    }
    *out = h;
    return ZT_OK;
}

int zt_serve_http_port(const zt_serve_http *h)
{
    return h->port;
}

void zt_serve_http_stop(zt_serve_http *h)
{
    if (!h) return;
    MHD_stop_daemon(h->daemon); /* closes the listening socket too */
    free(h);
}

#else /* no libmicrohttpd */

struct zt_serve_http {
    int port;
};

bool zt_serve_http_available(void)
{
    return false;
}

zt_status zt_serve_http_start(zt_serve *srv, const char *host, int port, zt_serve_http **out)
{
    *out = NULL;
    return zt_fail(ZT_ERR_UNSUPPORTED,
                   "serve: this zeroth was built without libmicrohttpd (install libmicrohttpd-dev, "
                   "e.g. scripts/install-deps.sh, and rebuild)");
}

int zt_serve_http_port(const zt_serve_http *h)
{
    return h->port;
}

void zt_serve_http_stop(zt_serve_http *h)
{
    free(h);
}

#endif
