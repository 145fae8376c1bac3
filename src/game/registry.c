#include "core/alloc.h"
#include "core/rng.h"
#include "game/game.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const zt_game_def zt_game_tictactoe;
extern const zt_game_def zt_game_connect4;
extern const zt_game_def zt_game_sim;
extern const zt_game_def zt_game_backgammon;
extern const zt_game_def zt_game_g2048;

/* Adding a game: one file in src/game/ and one line here. */
const zt_game_def *const zt_game_registry[] = {
    &zt_game_tictactoe,
    &zt_game_connect4,
    &zt_game_sim,
    &zt_game_backgammon,
    &zt_game_g2048,
};
const int zt_game_registry_count = (int)(sizeof zt_game_registry / sizeof zt_game_registry[0]);

zt_status zt_game_new(const char *name, zt_config *cfg, zt_game **out)
{
    *out = NULL;
    for (int i = 0; i < zt_game_registry_count; i++) {
        const zt_game_def *def = zt_game_registry[i];
        if (!def) continue;
        if (strcmp(def->name, name) != 0) continue;
        zt_config *own = NULL;
        if (!cfg) cfg = own = zt_config_new();
        zt_game *g = zt_xcalloc(1, sizeof *g);
        zt_status st = def->create(cfg, g);
        zt_config_free(own);
        if (st != ZT_OK) {
            zt_game_free(g);
            return st;
        }
        ZT_ASSERT(g->state_size <= ZT_MAX_STATE_BYTES);
        ZT_ASSERT(g->num_actions <= ZT_MAX_ACTIONS);
        ZT_ASSERT(g->max_chance_outcomes <= ZT_MAX_CHANCE_OUTCOMES);
        ZT_ASSERT(g->num_symmetries >= 1);
        if (g->num_players == 0) g->num_players = 2;
        ZT_ASSERT(g->num_players == 1 || g->num_players == 2);
        if (!g->title[0]) snprintf(g->title, sizeof g->title, "%s", g->name);
        g->def = def;
        *out = g;
        return ZT_OK;
    }
    char known[256] = "";
    for (int i = 0; i < zt_game_registry_count; i++) {
        if (!zt_game_registry[i]) continue;
        if (known[0]) strncat(known, ", ", sizeof known - strlen(known) - 1);
        strncat(known, zt_game_registry[i]->name, sizeof known - strlen(known) - 1);
    }
    return zt_fail(ZT_ERR_NOT_FOUND, "unknown game '%s' (known: %s)", name, known);
}

void zt_game_free(zt_game *g)
{
    if (!g) return;
    if (g->destroy) g->destroy(g);
    free(g);
}

int zt_game_legal_mask(const zt_game *g, const void *s, uint8_t *mask)
{
    uint16_t actions[ZT_MAX_ACTIONS];
    memset(mask, 0, (size_t)g->num_actions);
    int n = g->legal(g, s, actions);
    for (int i = 0; i < n; i++) mask[actions[i]] = 1;
    return n;
}

bool zt_game_move_wins(const zt_game *g, const void *s, int action)
{
    uint8_t child[ZT_MAX_STATE_BYTES];
    float r[2];
    int me = g->current_player(g, s);
    memcpy(child, s, g->state_size);
    g->apply(g, child, action);
    if (g->current_player(g, child) != ZT_TERMINAL) return false;
    g->returns(g, child, r);
    return r[me] > 0;
}

bool zt_game_wins_at_once(const zt_game *g, const void *s)
{
    uint16_t legal[ZT_MAX_ACTIONS];
    int n = g->legal(g, s, legal);
    for (int i = 0; i < n; i++)
        if (zt_game_move_wins(g, s, legal[i])) return true;
    return false;
}

int zt_game_sample_chance(const zt_game *g, const void *s, zt_rng *rng)
{
    int outcomes[ZT_MAX_CHANCE_OUTCOMES];
    float probs[ZT_MAX_CHANCE_OUTCOMES];
    int n = g->chance_outcomes(g, s, outcomes, probs);
    ZT_ASSERT(n > 0);
    return outcomes[zt_rng_categorical(rng, probs, n)];
}

int zt_game_random_playout(const zt_game *g, void *s, zt_rng *rng)
{
    uint16_t actions[ZT_MAX_ACTIONS];
    int plies = 0;
    for (;;) {
        int p = g->current_player(g, s);
        if (p == ZT_TERMINAL) return plies;
        if (p == ZT_CHANCE) {
            g->apply(g, s, zt_game_sample_chance(g, s, rng));
            continue;
        }
        int n = g->legal(g, s, actions);
        ZT_ASSERT(n > 0);
        g->apply(g, s, actions[zt_rng_below(rng, (uint32_t)n)]);
        plies++;
    }
}

void zt_game_spec(const zt_game *g, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s%s", g->name, g->settings[0] ? " " : "", g->settings);
}

zt_status zt_game_from_spec(const char *spec, zt_game **out)
{
    *out = NULL;
    char copy[256];
    if (strlen(spec) >= sizeof copy) return zt_fail(ZT_ERR_INVALID, "game spec too long");
    strcpy(copy, spec);
    char *save = NULL;
    char *name = strtok_r(copy, " ", &save);
    if (!name) return zt_fail(ZT_ERR_INVALID, "empty game spec");
    zt_config *cfg = zt_config_new();
    zt_status st = ZT_OK;
    for (char *tok = strtok_r(NULL, " ", &save); tok && st == ZT_OK; tok = strtok_r(NULL, " ", &save))
        st = zt_config_set(cfg, tok);
    if (st == ZT_OK) st = zt_game_new(name, cfg, out);
    if (st == ZT_OK && (st = zt_config_check_unused(cfg)) != ZT_OK) {
        zt_game_free(*out);
        *out = NULL;
    }
    zt_config_free(cfg);
    return st;
}

int zt_game_position_sets(const zt_game *g, const zt_position_set **sets)
{
    *sets = NULL;
    if (!g->def || !g->def->position_sets) return 0;
    return g->def->position_sets(g, sets);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

zt_judge zt_game_positions_judge(const zt_game *g, const char *path)
{
    const zt_position_set *sets;
    int n = zt_game_position_sets(g, &sets);
    for (int i = 0; i < n; i++)
        if (strcmp(base_name(path), base_name(sets[i].file)) == 0) return sets[i].judge;
    return n > 0 ? sets[0].judge : ZT_JUDGE_OPTIMAL;
}
