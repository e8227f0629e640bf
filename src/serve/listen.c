/*
 * listen.c — the accepting side of `spillway serve` (server.h). One thread
 * accepts on the listening socket and hands each connection to
 * libmicrohttpd (MHD_add_connection), or refuses it past a cap: max_conns
 * open in all, or max_conns_per_addr from one client address (an IPv4
 * address, an IPv6 /64). A refused connection gets a short 503 with
 * Retry-After and Connection: close, then a FIN; what the client sends is
 * read and dropped for a moment before the close, so no RST destroys the
 * answer. The same thread enforces the request deadline: a connection
 * whose request (headers and body) is not all in timeout_s after it
 * opened, or after its previous answer, is shut down however slowly it
 * trickles. Slots (one per connection) are under `mu`; libmicrohttpd's
 * threads report a connection's start and end, and when its request is in
 * and answered. Refused sockets being drained belong to the thread alone.
 */
#define _DEFAULT_SOURCE /* getaddrinfo, NI_MAXHOST, setrlimit */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "serve/server.h"
#include "util/clock.h"
#include "util/error.h"

enum {
    DRAIN_MAX = 256,             /* refused sockets drained at once; past it, closed at once */
    ACCEPT_BURST = 64,           /* accepts per wake-up, so deadlines are still watched */
    FD_SPARE = 64,               /* descriptors beyond connections and drains: model, logs */
};
#define DRAIN_S 2.0              /* how long a refused socket is read before its close */
#define PENDING_MAX_S 10.0       /* handed to libmicrohttpd but never started: forgotten */
#define LOG_EVERY_S 10.0         /* at most one line a period about refusals and cuts */
#define BACKOFF_S 0.1            /* out of descriptors: accept again after this */

typedef enum slot_state { SLOT_FREE, SLOT_PENDING, SLOT_OPEN } slot_state;

/* Whom the per-address cap counts: an IPv4 address or an IPv6 /64 (an
 * IPv4-mapped IPv6 address is the IPv4 one). */
typedef struct addr_key {
    uint8_t family;              /* 4 or 6 */
    uint8_t bytes[8];
} addr_key;

struct srv_slot {
    slot_state state;
    int fd;
    addr_key key;
    bool receiving;              /* a request's headers or body are awaited */
    bool cut;                    /* shut down at its deadline */
    double since_s;              /* when handed to libmicrohttpd */
    double deadline_s;           /* while receiving: the request must be in by then */
};

typedef struct drain {
    int fd;
    double until_s;
} drain;

struct srv_listener {
    int fd;                      /* the listening socket */
    int wake[2];                 /* a pipe: a byte stops the thread */
    pthread_t thread;
    bool started;
    struct MHD_Daemon *d;
    double timeout_s;
    unsigned max_per_addr;
    bool loopback;
    char url[NI_MAXHOST + 16];

    pthread_mutex_t mu;          /* the slots and the counters */
    srv_slot *slots;             /* (max_conns) */
    size_t n_slots;
    uint64_t n_refused, n_cut;   /* since the last log line */
    srv_conn_counts total;       /* since the start (/metrics) */
    double log_s;                /* when it was printed */
    const char *refused_why;     /* the last refusal's cap */

    drain drains[DRAIN_MAX];     /* the thread's alone */
    size_t n_drains;
    struct pollfd pfd[2 + DRAIN_MAX];
    char refusal[2][512];        /* the canned 503s: all open, this address */
    size_t refusal_len[2];
};

/* ---- addresses ------------------------------------------------------------ */

static addr_key key_of(const struct sockaddr_storage *ss) {
    addr_key k = {0};
    if (ss->ss_family == AF_INET) {
        k.family = 4;
        memcpy(k.bytes, &((const struct sockaddr_in *)ss)->sin_addr, 4);
    } else if (ss->ss_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a)) {
            k.family = 4;
            memcpy(k.bytes, a->s6_addr + 12, 4);
        } else {
            k.family = 6;
            memcpy(k.bytes, a->s6_addr, 8);
        }
    }
    return k;
}

static bool loopback_of(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family != AF_INET6)
        return false;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

/* "127.0.0.1" or "::1" (buf: NI_MAXHOST bytes). */
static const char *addr_text(const struct sockaddr *sa, socklen_t len, char *buf) {
    if (getnameinfo(sa, len, buf, NI_MAXHOST, NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(buf, NI_MAXHOST, "?");
    return buf;
}

/* ---- refusals ------------------------------------------------------------- */

static void format_refusal(srv_listener *l, int i, const char *msg) {
    char body[256];
    const int nb = snprintf(body, sizeof body, "{\"error\":{\"message\":\"%s; retry later\","
                            "\"type\":\"server_error\",\"param\":null,\"code\":null}}", msg);
    const int n = snprintf(l->refusal[i], sizeof l->refusal[i],
                           "HTTP/1.1 503 Service Unavailable\r\n"
                           "Content-Type: application/json\r\n"
                           "Retry-After: 1\r\n"
                           "Connection: close\r\n"
                           "Content-Length: %d\r\n\r\n%s", nb, body);
    l->refusal_len[i] = (size_t)n;
}

/* Reads and drops what a refused client sent. False once it closed or
 * failed (nothing more to wait for). */
static bool drain_read(int fd) {
    char buf[4096];
    for (int i = 0; i < 16; i++) {
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n == 0)
            return false;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    }
    return true;
}

/* One line at most every LOG_EVERY_S about refused and cut connections
 * (under mu). */
static void log_counts(srv_listener *l, double now) {
    if (now - l->log_s < LOG_EVERY_S || (l->n_refused == 0 && l->n_cut == 0))
        return;
    if (l->n_refused > 0)
        fprintf(stderr, "serve: refused %llu connections with 503 (%s); see --max-conns and "
                "--max-conns-per-addr\n", (unsigned long long)l->n_refused, l->refused_why);
    if (l->n_cut > 0)
        fprintf(stderr, "serve: closed %llu connections that sent no whole request within "
                "--timeout %.0f s (slow, or idle after an answer)\n",
                (unsigned long long)l->n_cut, l->timeout_s);
    l->n_refused = l->n_cut = 0;
    l->log_s = now;
}

/* The canned 503, a FIN, then the socket drained for DRAIN_S (or closed at
 * once when DRAIN_MAX are draining). */
static void refuse(srv_listener *l, int fd, int which, double now) {
    (void)send(fd, l->refusal[which], l->refusal_len[which], MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
    if (drain_read(fd) && l->n_drains < DRAIN_MAX)
        l->drains[l->n_drains++] = (drain){fd, now + DRAIN_S};
    else
        close(fd);
    pthread_mutex_lock(&l->mu);
    l->n_refused++;
    if (which == 0)
        l->total.refused_all++;
    else
        l->total.refused_addr++;
    l->refused_why = which == 0 ? "open connections at --max-conns"
                                : "one address at --max-conns-per-addr";
    log_counts(l, now);
    pthread_mutex_unlock(&l->mu);
}

/* ---- the thread ----------------------------------------------------------- */

/* A slot for fd from ss, or a refusal: returns the slot or NULL with
 * *which set (0: all open, 1: this address). */
static srv_slot *admit(srv_listener *l, int fd, const struct sockaddr_storage *ss, double now,
                       int *which) {
    const addr_key k = key_of(ss);
    srv_slot *slot = NULL;
    unsigned same = 0;
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->n_slots; i++) {
        srv_slot *t = &l->slots[i];
        if (t->state == SLOT_PENDING && t->fd == fd)
            t->state = SLOT_FREE; /* its number came back: libmicrohttpd closed it unstarted */
        if (t->state == SLOT_FREE)
            slot = slot != NULL ? slot : t;
        else if (!memcmp(&t->key, &k, sizeof k))
            same++;
    }
    *which = slot == NULL ? 0 : 1;
    if (slot == NULL || same >= l->max_per_addr) {
        slot = NULL;
    } else {
        *slot = (srv_slot){.state = SLOT_PENDING, .fd = fd, .key = k, .receiving = true,
                           .since_s = now, .deadline_s = now + l->timeout_s};
    }
    pthread_mutex_unlock(&l->mu);
    return slot;
}

/* Accepts up to ACCEPT_BURST connections. Returns when to accept again:
 * 0 at once, or a back-off time when out of descriptors. */
static double accept_some(srv_listener *l) {
    for (int i = 0; i < ACCEPT_BURST; i++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        const int fd = accept(l->fd, (struct sockaddr *)&ss, &len);
        const double now = sw_clock_s();
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                pthread_mutex_lock(&l->mu);
                if (now - l->log_s >= LOG_EVERY_S) {
                    fprintf(stderr, "serve: cannot accept: %s (raise ulimit -n, or lower "
                            "--max-conns)\n", strerror(errno));
                    l->log_s = now;
                }
                pthread_mutex_unlock(&l->mu);
                return now + BACKOFF_S;
            }
            return 0; /* EAGAIN: none left; ECONNABORTED, EINTR: next time */
        }
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0 ||
            fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
            close(fd);
            continue;
        }
        int which = 0;
        srv_slot *slot = admit(l, fd, &ss, now, &which);
        if (slot == NULL) {
            refuse(l, fd, which, now);
            continue;
        }
        if (MHD_add_connection(l->d, fd, (struct sockaddr *)&ss, len) != MHD_YES) {
            pthread_mutex_lock(&l->mu); /* it closed fd without starting it */
            if (slot->state == SLOT_PENDING && slot->fd == fd)
                slot->state = SLOT_FREE;
            pthread_mutex_unlock(&l->mu);
        }
    }
    return 0;
}

/* Shuts down the connections past their request deadline and forgets the
 * handed-over ones that never started. Returns the next deadline. */
static double watch_deadlines(srv_listener *l, double now) {
    double next = now + 1.0;
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->n_slots; i++) {
        srv_slot *t = &l->slots[i];
        if (t->state == SLOT_PENDING && now - t->since_s > PENDING_MAX_S) {
            t->state = SLOT_FREE;
            continue;
        }
        if (t->state != SLOT_OPEN || !t->receiving || t->cut)
            continue;
        if (now >= t->deadline_s) {
            /* libmicrohttpd reads the end and closes it; fd stays its own
             * (and open) until srv_listen_closed, which takes mu */
            shutdown(t->fd, SHUT_RDWR);
            t->cut = true;
            l->n_cut++;
            l->total.timed_out++;
        } else if (t->deadline_s < next) {
            next = t->deadline_s;
        }
    }
    log_counts(l, now);
    pthread_mutex_unlock(&l->mu);
    return next;
}

/* Reads the draining sockets that poll marked (pfd from index first) and
 * closes those done or past their time. */
static void service_drains(srv_listener *l, size_t first, double now) {
    for (size_t i = l->n_drains; i-- > 0;) {
        drain *dr = &l->drains[i];
        const short ev = l->pfd[first + i].revents;
        bool open = now < dr->until_s;
        if (ev != 0)
            open = drain_read(dr->fd) && open;
        if (open)
            continue;
        if (now >= dr->until_s)
            drain_read(dr->fd); /* what came last, so the close sends no RST */
        close(dr->fd);
        *dr = l->drains[--l->n_drains]; /* the last was serviced already */
    }
}

static void *listen_main(void *arg) {
    srv_listener *l = arg;
    double accept_at = 0, next = 0;
    for (;;) {
        double now = sw_clock_s();
        nfds_t n = 0;
        l->pfd[n++] = (struct pollfd){.fd = l->wake[0], .events = POLLIN};
        const bool listening = now >= accept_at;
        if (listening)
            l->pfd[n++] = (struct pollfd){.fd = l->fd, .events = POLLIN};
        const size_t first = n;
        double until = next;
        until = !listening && accept_at < until ? accept_at : until;
        for (size_t i = 0; i < l->n_drains; i++) {
            l->pfd[n++] = (struct pollfd){.fd = l->drains[i].fd, .events = POLLIN};
            until = l->drains[i].until_s < until ? l->drains[i].until_s : until;
        }
        const int wait_ms = until > now ? (int)((until - now) * 1000.0) + 1 : 0;
        if (poll(l->pfd, n, wait_ms) < 0) {
            if (errno != EINTR)
                nanosleep(&(struct timespec){0, 10000000L}, NULL); /* ENOMEM: a moment */
            continue;
        }
        if (l->pfd[0].revents != 0)
            break;
        now = sw_clock_s();
        service_drains(l, first, now);
        if (listening && (l->pfd[1].revents & POLLIN))
            accept_at = accept_some(l);
        next = watch_deadlines(l, sw_clock_s());
    }
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------------ */

/* Raises the soft descriptor limit to what the caps need, where the hard
 * one allows; warns where it does not. */
static void raise_fd_limit(size_t need) {
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= need)
        return;
    r.rlim_cur = r.rlim_max == RLIM_INFINITY || r.rlim_max >= need ? need : r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
    if (r.rlim_cur < need)
        fprintf(stderr, "serve: warning: %llu file descriptors (ulimit -n) for %zu needed by "
                "--max-conns; connections past them wait\n", (unsigned long long)r.rlim_cur,
                need);
}

/* Binds and listens on the first of host's addresses that works. */
static int listen_on(srv_listener *l, const srv_net_options *o) {
    char port[8];
    snprintf(port, sizeof port, "%u", (unsigned)o->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    const int gai = getaddrinfo(o->host, port, &hints, &res);
    if (gai != 0) {
        sw_errorf(SW_ERR_ARG, "--host '%s': %s (an IPv4 or IPv6 address: 127.0.0.1, ::1, or "
                  "0.0.0.0 or :: for every interface)", o->host, gai_strerror(gai));
        return -1;
    }
    int fd = -1, err = 0;
    for (const struct addrinfo *a = res; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        const int one = 1, zero = 0;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (a->ai_family == AF_INET6 &&
            IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr))
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero); /* :: takes IPv4 */
        if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0 ||
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0 ||
            fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
            err = errno;
            close(fd);
            fd = -1;
            continue;
        }
        char text[NI_MAXHOST];
        addr_text(a->ai_addr, a->ai_addrlen, text);
        snprintf(l->url, sizeof l->url, a->ai_family == AF_INET6 ? "http://[%s]:%u"
                                                                 : "http://%s:%u",
                 text, (unsigned)o->port);
        l->loopback = loopback_of(a->ai_addr);
    }
    freeaddrinfo(res);
    if (fd < 0)
        sw_errorf(SW_ERR_IO, "cannot listen on %s port %u: %s (%s)", o->host, (unsigned)o->port,
                  strerror(err), err == EADDRINUSE      ? "is the port in use? see --port"
                                 : err == EADDRNOTAVAIL ? "no interface here has that address"
                                 : err == EACCES        ? "ports under 1024 need privileges"
                                                        : "see --host and --port");
    return fd;
}

srv_listener *srv_listen_open(const srv_net_options *o) {
    srv_listener *l = calloc(1, sizeof *l);
    if (l == NULL) {
        sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the listener");
        return NULL;
    }
    l->fd = l->wake[0] = l->wake[1] = -1;
    l->timeout_s = o->timeout_s;
    l->max_per_addr = o->max_conns_per_addr;
    l->n_slots = o->max_conns;
    pthread_mutex_init(&l->mu, NULL);
    char msg[128];
    snprintf(msg, sizeof msg, "the server has %u connections open", o->max_conns);
    format_refusal(l, 0, msg);
    snprintf(msg, sizeof msg, "%u connections are open from this address",
             o->max_conns_per_addr);
    format_refusal(l, 1, msg);
    if ((l->slots = calloc(l->n_slots, sizeof *l->slots)) == NULL) {
        sw_errorf(SW_ERR_OOM_HOST, "out of host memory for %zu connection slots", l->n_slots);
        goto fail;
    }
    if (pipe(l->wake) != 0) {
        sw_errorf(SW_ERR_IO, "cannot create a pipe: %s", strerror(errno));
        l->wake[0] = l->wake[1] = -1;
        goto fail;
    }
    if ((l->fd = listen_on(l, o)) < 0)
        goto fail;
    raise_fd_limit(l->n_slots + DRAIN_MAX + FD_SPARE);
    return l;
fail:
    srv_listen_close(l);
    return NULL;
}

bool srv_listen_start(srv_listener *l, struct MHD_Daemon *d) {
    l->d = d;
    if (pthread_create(&l->thread, NULL, listen_main, l) != 0) {
        sw_errorf(SW_ERR_IO, "cannot start the accepting thread");
        return false;
    }
    l->started = true;
    return true;
}

void srv_listen_stop(srv_listener *l) {
    if (l == NULL)
        return;
    if (l->started) {
        (void)!write(l->wake[1], "x", 1);
        pthread_join(l->thread, NULL);
        l->started = false;
    }
    for (size_t i = 0; i < l->n_drains; i++) {
        drain_read(l->drains[i].fd);
        close(l->drains[i].fd);
    }
    l->n_drains = 0;
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}

void srv_listen_close(srv_listener *l) {
    if (l == NULL)
        return;
    srv_listen_stop(l);
    if (l->wake[0] >= 0) {
        close(l->wake[0]);
        close(l->wake[1]);
    }
    pthread_mutex_destroy(&l->mu);
    free(l->slots);
    free(l);
}

const char *srv_listen_url(const srv_listener *l) {
    return l->url;
}

bool srv_listen_loopback(const srv_listener *l) {
    return l->loopback;
}

/* ---- libmicrohttpd's reports ---------------------------------------------- */

srv_slot *srv_listen_opened(srv_listener *l, int fd) {
    srv_slot *slot = NULL;
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->n_slots && slot == NULL; i++)
        if (l->slots[i].state == SLOT_PENDING && l->slots[i].fd == fd)
            slot = &l->slots[i];
    if (slot != NULL)
        slot->state = SLOT_OPEN;
    pthread_mutex_unlock(&l->mu);
    return slot; /* NULL: forgotten (PENDING_MAX_S); it runs without a deadline */
}

void srv_listen_closed(srv_listener *l, srv_slot *slot) {
    if (slot == NULL)
        return;
    const double now = sw_clock_s();
    pthread_mutex_lock(&l->mu);
    /* libmicrohttpd's own idle timeout (the same --timeout) may close a
     * connection awaiting its request before watch_deadlines does: a time
     * out all the same (its clock starts at the hand-over, after ours) */
    if (slot->state == SLOT_OPEN && slot->receiving && !slot->cut &&
        now >= slot->deadline_s - 0.1)
        l->total.timed_out++;
    slot->state = SLOT_FREE;
    pthread_mutex_unlock(&l->mu);
}

void srv_listen_received(srv_listener *l, srv_slot *slot) {
    if (slot == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    slot->receiving = false;
    pthread_mutex_unlock(&l->mu);
}

void srv_listen_answered(srv_listener *l, srv_slot *slot) {
    if (slot == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    slot->receiving = true;
    slot->deadline_s = sw_clock_s() + l->timeout_s;
    pthread_mutex_unlock(&l->mu);
}

srv_conn_counts srv_listen_counts(srv_listener *l) {
    pthread_mutex_lock(&l->mu);
    const srv_conn_counts c = l->total;
    pthread_mutex_unlock(&l->mu);
    return c;
}
