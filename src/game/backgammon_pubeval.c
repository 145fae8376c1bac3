/* Tesauro's pubeval: a public-domain linear evaluator of backgammon
 * positions (contact and race weight sets of 122 each), the customary
 * baseline opponent. It scores every complete play for the roll by
 * w . x(position after the play, from the mover's view) and plays the best;
 * the race weights apply when the position before the play has no contact.
 * Ties go to the earliest play in gnubg's generation order, so the player is
 * deterministic. A turn is several actions: the chosen play is kept and its
 * next checker move returned while the game follows the plan. */
#include "game/player.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "game/backgammon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PUBEVAL_INPUTS = 122 };

typedef struct pubeval {
    float contact[PUBEVAL_INPUTS];
    float race[PUBEVAL_INPUTS];
    bg_playlist *plays; /* scratch for the plays of one roll */
    /* The rest of the chosen play: plan[next..len) applies while the state
     * equals `expect`. */
    bg_state expect;
    uint16_t plan[4];
    int next, len;
} pubeval;

/* Reads `count` numbers; anything else in the file is an error. */
static zt_status read_weights(const char *path, float *w, int count)
{
    FILE *f = fopen(path, "r");
    if (!f) return zt_fail(ZT_ERR_NOT_FOUND, "pubeval: cannot open %s", path);
    int n = 0;
    while (n < count && fscanf(f, "%f", &w[n]) == 1) n++;
    char extra;
    bool trailing = fscanf(f, " %c", &extra) == 1;
    fclose(f);
    if (n != count || trailing)
        return zt_fail(ZT_ERR_CORRUPT, "pubeval: %s should hold exactly %d numbers", path, count);
    return ZT_OK;
}

/* The weights are reference data (core/fileio.h, zt_data_find). */
static zt_status load_weights(pubeval *pe)
{
    char contact[4096], race[4096];
    if (!zt_data_find(NULL, "backgammon/pubeval/WT.cntc", contact, sizeof contact) ||
        !zt_data_find(NULL, "backgammon/pubeval/WT.race", race, sizeof race))
        return zt_fail(ZT_ERR_NOT_FOUND,
                       "pubeval: weights backgammon/pubeval/WT.cntc not found under $ZT_DATA_DIR, "
                       "../shared/data or tests/data");
    ZT_TRY(read_weights(contact, pe->contact, PUBEVAL_INPUTS));
    return read_weights(race, pe->race, PUBEVAL_INPUTS);
}

/* Tesauro's inputs, 5 per point from the mover's point 24 down to 1, with
 * n the mover's checkers there or minus the opponent's: n == -1 (an
 * opponent blot), n == 1, n >= 2, n == 3, (n - 3) / 2 for n >= 4; then the
 * opponent's checkers on the bar / 2 and the mover's borne off / 15. */
static float score(const float *w, const uint8_t *own, const uint8_t *opp, int own_off)
{
    float sum = 0.0f;
    for (int p = 24; p >= 1; p--) {
        const float *u = w + 5 * (24 - p);
        int n = own[p - 1] ? own[p - 1] : -(int)opp[24 - p];
        if (n == -1) sum += u[0];
        if (n == 1) sum += u[1];
        if (n >= 2) sum += u[2];
        if (n == 3) sum += u[3];
        if (n >= 4) sum += u[4] * (float)(n - 3) / 2.0f;
    }
    sum += w[120] * (float)opp[BG_BAR] / 2.0f;
    sum += w[121] * (float)own_off / 15.0f;
    return sum;
}

static int choose(zt_player *p, const void *vs, zt_rng *rng)
{
    (void)rng;
    pubeval *pe = p->impl;
    const bg_state *s = vs;
    ZT_ASSERT(s->n_dice > 0);
    if (pe->next < pe->len && memcmp(&pe->expect, s, sizeof *s) == 0) {
        int a = pe->plan[pe->next++];
        zt_bg_apply(&pe->expect, a);
        return a;
    }
    zt_bg_plays(s, pe->plays);
    ZT_ASSERT(pe->plays->count > 0);
    const float *w = zt_bg_is_race(s) ? pe->race : pe->contact;
    int me = s->turn, best = 0;
    float best_score = 0.0f;
    for (int i = 0; i < pe->plays->count; i++) {
        const bg_state *t = &pe->plays->plays[i].after;
        float v = score(w, t->board[me], t->board[!me], t->off[me]);
        if (i == 0 || v > best_score) {
            best = i;
            best_score = v;
        }
    }
    const bg_play *play = &pe->plays->plays[best];
    pe->len = play->n_moves;
    for (int i = 0; i < play->n_moves; i++) {
        int src = play->from[i] == 25 ? BG_BAR : play->from[i] - 1;
        pe->plan[i] = (uint16_t)(src * 6 + play->die[i] - 1);
    }
    pe->expect = *s;
    zt_bg_apply(&pe->expect, pe->plan[0]);
    pe->next = 1;
    return pe->plan[0];
}

static void player_free(zt_player *p)
{
    pubeval *pe = p->impl;
    if (pe) free(pe->plays);
    free(pe);
    free(p);
}

zt_status zt_player_new_pubeval(const zt_game *g, zt_player **out)
{
    *out = NULL;
    if (strcmp(g->name, "backgammon") != 0)
        return zt_fail(ZT_ERR_UNSUPPORTED, "player 'pubeval' exists for backgammon, not %s",
                       g->name);
    pubeval *pe = zt_xcalloc(1, sizeof *pe);
    zt_status st = load_weights(pe);
    if (st != ZT_OK) {
        free(pe);
        return st;
    }
    pe->plays = zt_xmalloc(sizeof *pe->plays);
    zt_player *p = zt_xcalloc(1, sizeof *p);
    p->game = g;
    snprintf(p->name, sizeof p->name, "pubeval");
    p->impl = pe;
    p->choose = choose;
    p->free = player_free;
    *out = p;
    return ZT_OK;
}
