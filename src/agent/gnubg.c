/* GNU Backgammon driven over a socket pair in text mode.
 *
 * Protocol. Every request is a batch of commands ended by a sentinel,
 * "set player 0 name zsyncN", whose reply "Player 0 is now known as
 * `zsyncN'." is the last line to read (gnubg answers every command on
 * stdout, in order). Within a batch, "set board" echoes the board with its
 * position id, which is checked against the id sent, and "hint 1" prints
 * the best play as "    1. Cubeful 0-ply    8/5 6/5    Eq.: +0.218". */
#include "agent/gnubg.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/timer.h"
#include "game/backgammon.h"

/* gnubg answers a 0-ply hint in milliseconds and a 3-ply one in seconds;
 * a minute without a reply means it is stuck. */
#define REPLY_TIMEOUT_MS 60000

/* The rest of a turn gnubg chose: in `state` (mid-turn), play `action`.
 * Games in flight at once may reach the same mid-turn state; `count`
 * remembers how many times it is still to be played. */
typedef struct pending {
    bg_state state;
    int action;
    int count;
} pending;

typedef struct gnubg_player {
    zt_player base;
    pid_t pid;
    int fd; /* our end of the socket pair: gnubg's stdin and stdout */
    char in[1 << 16];
    size_t in_len;
    unsigned sync;
    bg_playlist *plays;
    pending *pend;
    int npend, pend_cap;
    char error[512];
} gnubg_player;

static void set_error(gnubg_player *gp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(gnubg_player *gp, const char *fmt, ...)
{
    if (gp->error[0]) return; /* keep the first cause */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(gp->error, sizeof gp->error, fmt, ap);
    va_end(ap);
}

static bool send_all(gnubg_player *gp, const char *text)
{
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t w = send(gp->fd, text + done, len - done, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            set_error(gp, "gnubg: cannot write to it: %s", strerror(errno));
            return false;
        }
        done += (size_t)w;
    }
    return true;
}

/* The next line of gnubg's output into line (NUL-terminated, cut at cap). */
static bool read_line(gnubg_player *gp, char *line, size_t cap)
{
    uint64_t deadline = zt_now_ns() + (uint64_t)REPLY_TIMEOUT_MS * 1000000u;
    for (;;) {
        char *nl = memchr(gp->in, '\n', gp->in_len);
        if (nl) {
            size_t n = (size_t)(nl - gp->in);
            size_t k = n < cap - 1 ? n : cap - 1;
            memcpy(line, gp->in, k);
            line[k] = '\0';
            memmove(gp->in, nl + 1, gp->in_len - n - 1);
            gp->in_len -= n + 1;
            return true;
        }
        if (gp->in_len == sizeof gp->in)
            gp->in_len = 0; /* a line longer than the buffer: drop it */
        uint64_t now = zt_now_ns();
        if (now >= deadline) {
            set_error(gp, "gnubg: no reply within %d s", REPLY_TIMEOUT_MS / 1000);
            return false;
        }
        struct pollfd pfd = {.fd = gp->fd, .events = POLLIN};
        int r = poll(&pfd, 1, (int)((deadline - now) / 1000000u) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        ssize_t got = read(gp->fd, gp->in + gp->in_len, sizeof gp->in - gp->in_len);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            set_error(gp, "gnubg exited unexpectedly");
            return false;
        }
        gp->in_len += (size_t)got;
    }
}

/* Sends `commands` and the sentinel; calls on_line for every line up to the
 * sentinel's reply. */
static bool request(gnubg_player *gp, const char *commands,
                    void (*on_line)(gnubg_player *gp, const char *line, void *ctx), void *ctx)
{
    char sentinel[64], expect[96], line[1024];
    gp->sync++;
    snprintf(sentinel, sizeof sentinel, "set player 0 name zsync%u\n", gp->sync);
    snprintf(expect, sizeof expect, "Player 0 is now known as `zsync%u'.", gp->sync);
    if (!send_all(gp, commands) || !send_all(gp, sentinel)) return false;
    for (;;) {
        if (!read_line(gp, line, sizeof line)) return false;
        if (strstr(line, expect)) return true;
        if (on_line) on_line(gp, line, ctx);
    }
}

typedef struct hint_reply {
    char board_id[32];
    char play[128];
    char last[256]; /* the last line, for error messages */
} hint_reply;

/* "    1. Cubeful 0-ply    8/5 6/5                      Eq.: +0.218": the
 * play is what lies between the evaluation's "N-ply" and "Eq.:". */
static void parse_hint_line(const char *line, char *play, size_t cap)
{
    const char *eq = strstr(line, "Eq.:");
    if (!eq) return;
    char text[256];
    size_t n = (size_t)(eq - line) < sizeof text - 1 ? (size_t)(eq - line) : sizeof text - 1;
    memcpy(text, line, n);
    text[n] = '\0';
    char *tokens[32];
    int nt = 0, start = -1;
    char *save = NULL;
    for (char *t = strtok_r(text, " \t", &save); t && nt < 32; t = strtok_r(NULL, " \t", &save))
        tokens[nt++] = t;
    for (int i = 0; i < nt; i++) {
        size_t l = strlen(tokens[i]);
        if (l > 4 && strcmp(tokens[i] + l - 4, "-ply") == 0) {
            start = i + 1;
            break;
        }
    }
    if (start < 0) return;
    size_t used = 0;
    play[0] = '\0';
    for (int i = start; i < nt && used < cap; i++)
        used += (size_t)snprintf(play + used, cap - used, "%s%s", i > start ? " " : "", tokens[i]);
}

static void on_hint_line(gnubg_player *gp, const char *line, void *ctx)
{
    hint_reply *h = ctx;
    const char *id = strstr(line, "Position ID:");
    if (id) sscanf(id + strlen("Position ID:"), "%31s", h->board_id);
    const char *p = line;
    while (*p == ' ') p++;
    if (strncmp(p, "1. ", 3) == 0 && !h->play[0]) parse_hint_line(p, h->play, sizeof h->play);
    if (line[0]) snprintf(h->last, sizeof h->last, "%s", line);
}

static void add_pending(gnubg_player *gp, const bg_state *s, int action)
{
    for (int i = 0; i < gp->npend; i++)
        if (memcmp(&gp->pend[i].state, s, sizeof *s) == 0) {
            gp->pend[i].count++;
            return;
        }
    gp->pend = zt_xgrow(gp->pend, &gp->pend_cap, gp->npend + 1, sizeof *gp->pend);
    gp->pend[gp->npend++] = (pending){*s, action, 1};
}

static int take_pending(gnubg_player *gp, const bg_state *s)
{
    for (int i = 0; i < gp->npend; i++)
        if (memcmp(&gp->pend[i].state, s, sizeof *s) == 0) {
            int a = gp->pend[i].action;
            if (--gp->pend[i].count == 0) gp->pend[i] = gp->pend[--gp->npend];
            return a;
        }
    return -1;
}

static bool fresh_roll(const bg_state *s)
{
    return (s->n_dice == 2 && s->dice[0] != s->dice[1]) || s->n_dice == 4;
}

static int choose(zt_player *p, const void *vs, zt_rng *rng)
{
    (void)rng;
    gnubg_player *gp = p->impl;
    const bg_state *s = vs;
    if (gp->error[0]) return -1;
    int a = take_pending(gp, s);
    if (a >= 0) return a;
    if (!fresh_roll(s)) {
        set_error(gp, "gnubg: asked in the middle of a turn it did not start");
        return -1;
    }
    char id[BG_ID_LEN + 1], cmd[256];
    zt_bg_id_encode(s->board[s->turn], s->board[1 - s->turn], id);
    int d1 = s->dice[0], d2 = s->n_dice == 4 ? s->dice[0] : s->dice[1];
    /* "set turn 1" first: gnubg reads a position id as seen by the player
     * on roll, and player 1 stays on roll for every request. */
    snprintf(cmd, sizeof cmd, "set turn 1\nset board %s\nset dice %d %d\nhint 1\n", id, d1, d2);
    hint_reply h = {0};
    if (!request(gp, cmd, on_hint_line, &h)) return -1;
    if (strcmp(h.board_id, id) != 0) {
        set_error(gp, "gnubg: refused position %s (its last words: %s)", id, h.last);
        return -1;
    }
    if (!h.play[0]) {
        set_error(gp, "gnubg: no play for position %s roll %d%d (its last words: %s)", id, d1, d2,
                  h.last);
        return -1;
    }
    zt_bg_plays(s, gp->plays);
    char notation[128];
    for (int i = 0; i < gp->plays->count; i++) {
        const bg_play *pl = &gp->plays->plays[i];
        zt_bg_play_notation(s, pl, notation, sizeof notation);
        if (strcmp(notation, h.play) != 0) continue;
        /* Checker moves in the order played: each one is a legal action of
         * the state the previous one left. */
        bg_state cur = *s;
        int first = -1;
        for (int k = 0; k < pl->n_moves; k++) {
            int src = pl->from[k] == 25 ? BG_BAR : pl->from[k] - 1;
            int act = src * 6 + pl->die[k] - 1;
            if (k == 0)
                first = act;
            else
                add_pending(gp, &cur, act);
            zt_bg_apply(&cur, act);
        }
        return first;
    }
    set_error(gp, "gnubg: its play '%s' is not a legal play of position %s roll %d%d", h.play, id,
              d1, d2);
    return -1;
}

static void stop(gnubg_player *gp)
{
    if (gp->fd >= 0) close(gp->fd); /* EOF on its stdin: gnubg exits */
    gp->fd = -1;
    if (gp->pid <= 0) return;
    for (int i = 0; i < 100; i++) {
        if (waitpid(gp->pid, NULL, WNOHANG) == gp->pid) {
            gp->pid = 0;
            return;
        }
        usleep(20000);
    }
    kill(gp->pid, SIGKILL);
    waitpid(gp->pid, NULL, 0);
    gp->pid = 0;
}

static void player_free(zt_player *p)
{
    gnubg_player *gp = p->impl;
    stop(gp);
    free(gp->plays);
    free(gp->pend);
    free(gp);
}

bool zt_gnubg_names(const char *spec)
{
    return strcmp(spec, "gnubg") == 0 || strncmp(spec, "gnubg:", 6) == 0;
}

const char *zt_gnubg_error(const zt_player *p)
{
    if (!p || p->choose != choose) return ""; /* not a gnubg player */
    return ((const gnubg_player *)p->impl)->error;
}

static bool find_executable(char *out, size_t cap)
{
    const char *env = getenv("ZT_GNUBG");
    if (env && env[0]) {
        snprintf(out, cap, "%s", env);
        return access(out, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof dirs, "%s:/usr/games", path ? path : "/usr/bin");
    char *save = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, cap, "%s/gnubg", d[0] ? d : ".");
        if (access(out, X_OK) == 0) return true;
    }
    return false;
}

zt_status zt_player_new_gnubg(const zt_game *g, const char *spec, zt_player **out)
{
    *out = NULL;
    if (strcmp(g->name, "backgammon") != 0)
        return zt_fail(ZT_ERR_INVALID, "gnubg plays backgammon, not %s", g->name);
    int plies = 0;
    if (strcmp(spec, "gnubg") != 0) {
        char extra;
        if (sscanf(spec, "gnubg:%d%c", &plies, &extra) != 1 || plies < 0 || plies > 3)
            return zt_fail(ZT_ERR_INVALID, "player '%s': expected gnubg or gnubg:PLIES (0..3)",
                           spec);
    }
    char exe[1024];
    if (!find_executable(exe, sizeof exe))
        return zt_fail(ZT_ERR_NOT_FOUND,
                       "gnubg not found (install the Debian package gnubg, or set ZT_GNUBG)");
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return zt_fail(ZT_ERR_IO, "gnubg: socketpair: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return zt_fail(ZT_ERR_IO, "gnubg: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* The child: the socket is its stdin and stdout; its error messages
         * (unknown commands) are not part of the protocol. */
        int devnull = open("/dev/null", O_WRONLY);
        dup2(sv[1], 0);
        dup2(sv[1], 1);
        if (devnull >= 0) dup2(devnull, 2);
        execl(exe, "gnubg", "-t", "-q", "-r", (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    gnubg_player *gp = zt_xcalloc(1, sizeof *gp);
    gp->pid = pid;
    gp->fd = sv[0];
    gp->plays = zt_xmalloc(sizeof *gp->plays);
    gp->base.game = g;
    snprintf(gp->base.name, sizeof gp->base.name, "gnubg:%d", plies);
    gp->base.impl = gp;
    gp->base.choose = choose;
    gp->base.free = player_free;
    char setup[512];
    snprintf(setup, sizeof setup,
             "set display off\nset player 0 human\nset player 1 human\nset cube use off\n"
             "set jacoby off\nset evaluation chequerplay evaluation plies %d\n"
             "set evaluation chequerplay evaluation cubeful off\nnew game\n",
             plies);
    if (!request(gp, setup, NULL, NULL)) {
        zt_status st = zt_fail(ZT_ERR_IO, "%s (%s)", gp->error, exe);
        player_free(&gp->base);
        return st;
    }
    *out = &gp->base;
    return ZT_OK;
}
