/* Properties every game must have (game.h's conventions), checked along
 * random playouts of every registered game: legal actions sorted and
 * non-empty, chance probabilities positive and summing to 1, symmetries
 * consistent with actions and hashes, compact and text round trips, action
 * text round trips, finite observations, hashes equal for equal states.
 * And what each registry entry declares besides: its position sets exist in
 * the reference data with the judge each game is quoted by (Sim's for K6
 * k=3 avoid only), a solver where one is named, its baselines and default
 * arena opponents build as players of the game. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "core/fileio.h"
#include "game/game.h"
#include "game/solver.h"
#include "agent/player.h"

#include "zt_test.h"

static void check_state(const zt_game *g, const uint8_t *s, zt_rng *rng, float *obs)
{
    size_t sz = g->state_size;
    uint8_t a[ZT_MAX_STATE_BYTES], b[ZT_MAX_STATE_BYTES], c[ZT_MAX_STATE_BYTES];
    uint8_t compact[ZT_MAX_STATE_BYTES * 2];
    char text[ZT_MAX_TEXT];

    /* compact encoding round trip */
    g->encode(g, s, compact);
    memset(a, 0xA5, sizeof a);
    CHECK(g->decode(g, compact, a) == ZT_OK, "%s: decode failed", g->title);
    CHECK(memcmp(a, s, sz) == 0, "%s: decode(encode(s)) != s", g->title);

    /* text round trip */
    g->to_text(g, s, text, sizeof text);
    memset(b, 0x5A, sizeof b);
    CHECK(g->from_text(g, text, b) == ZT_OK, "%s: from_text('%s'): %s", g->title, text,
          zt_error_message());
    CHECK(memcmp(b, s, sz) == 0, "%s: from_text(to_text(s)) != s for '%s'", g->title, text);

    /* hash depends on the state only */
    memcpy(c, s, sz);
    CHECK(g->hash(g, c) == g->hash(g, s), "%s: hash of a copy differs", g->title);

    int player = g->current_player(g, s);
    if (player == ZT_TERMINAL) {
        float r[2];
        g->returns(g, s, r);
        if (zt_game_num_players(g) == 2)
            CHECK(fabsf(r[0] + r[1]) < 1e-6f, "%s: returns not zero-sum", g->title);
        else
            CHECK(r[0] >= 0 && r[1] == 0, "%s: one player's returns %g %g", g->title, r[0], r[1]);
        return;
    }
    if (player == ZT_CHANCE) {
        int outcomes[ZT_MAX_CHANCE_OUTCOMES];
        float probs[ZT_MAX_CHANCE_OUTCOMES];
        int n = g->chance_outcomes(g, s, outcomes, probs);
        CHECK(n > 0 && n <= g->max_chance_outcomes, "%s: %d chance outcomes", g->title, n);
        double total = 0;
        for (int i = 0; i < n; i++) {
            CHECK(probs[i] > 0, "%s: outcome %d has probability %g", g->title, outcomes[i],
                  probs[i]);
            total += probs[i];
        }
        CHECK(fabs(total - 1.0) < 1e-5, "%s: chance probabilities sum to %g", g->title, total);
        return;
    }
    CHECK(player == 0 || (player == 1 && zt_game_num_players(g) == 2), "%s: current player %d",
          g->title, player);

    uint16_t actions[ZT_MAX_ACTIONS];
    int n = g->legal(g, s, actions);
    CHECK(n > 0, "%s: no legal action at a player node", g->title);
    for (int i = 0; i < n; i++) {
        CHECK(actions[i] < g->num_actions, "%s: action %d out of range", g->title, actions[i]);
        if (i) CHECK(actions[i] > actions[i - 1], "%s: legal() not increasing", g->title);
    }

    /* observation is finite and complete */
    size_t obs_n = (size_t)zt_game_obs_size(g);
    for (size_t i = 0; i < obs_n; i++) obs[i] = NAN;
    g->observe(g, s, obs);
    for (size_t i = 0; i < obs_n; i++)
        if (!isfinite(obs[i])) {
            CHECK(isfinite(obs[i]), "%s: observation[%zu] not written or not finite", g->title, i);
            break;
        }

    /* action text round trip */
    for (int i = 0; i < n; i++) {
        char at[64];
        int back = -1;
        g->action_to_text(g, s, actions[i], at, sizeof at);
        CHECK(g->action_from_text(g, s, at, &back) == ZT_OK && back == actions[i],
              "%s: action %d -> '%s' -> %d", g->title, actions[i], at, back);
    }

    /* symmetries: sym(apply(s, a)) == apply(sym(s), sym_action(a)) */
    int act = actions[zt_rng_below(rng, (uint32_t)n)];
    int nsym = g->num_symmetries < 16 ? g->num_symmetries : 16;
    for (int k = 0; k < nsym; k++) {
        int sym = k < 8 ? k : (int)zt_rng_below(rng, (uint32_t)g->num_symmetries);
        memcpy(a, s, sz);
        g->apply(g, a, act);
        g->sym_state(g, sym, a, b); /* b = sym(apply(s, a)) */
        g->sym_state(g, sym, s, c); /* c = sym(s) */
        int sa = g->sym_action(g, sym, act);
        uint8_t mask[ZT_MAX_ACTIONS];
        zt_game_legal_mask(g, c, mask);
        CHECK(sa >= 0 && sa < g->num_actions && mask[sa], "%s: sym %d maps legal %d to %d",
              g->title, sym, act, sa);
        if (!(sa >= 0 && sa < g->num_actions && mask[sa])) continue;
        g->apply(g, c, sa);
        CHECK(memcmp(b, c, sz) == 0, "%s: sym %d does not commute with action %d", g->title, sym,
              act);
        CHECK(g->hash(g, b) == g->hash(g, c), "%s: sym %d hash mismatch", g->title, sym);
        if (sym == 0) CHECK(memcmp(b, a, sz) == 0, "%s: symmetry 0 is not the identity", g->title);
    }
}

static void test_game(const char *name, const char *const *settings, int playouts, uint64_t seed)
{
    zt_config *cfg = zt_config_new();
    for (int i = 0; settings && settings[i]; i++) zt_config_set(cfg, settings[i]);
    zt_game *g;
    zt_status st = zt_game_new(name, cfg, &g);
    zt_config_free(cfg);
    if (st != ZT_OK) {
        CHECK(st == ZT_OK, "creating %s: %s", name, zt_error_message());
        return;
    }
    zt_rng rng;
    zt_rng_seed(&rng, seed, 0);
    size_t obs_n = (size_t)zt_game_obs_size(g);
    float *obs = zt_xmalloc(obs_n * sizeof *obs);
    uint16_t actions[ZT_MAX_ACTIONS];
    int outcomes[ZT_MAX_CHANCE_OUTCOMES];
    float probs[ZT_MAX_CHANCE_OUTCOMES];
    int before = zt_test_failures;
    long states = 0;
    for (int p = 0; p < playouts && zt_test_failures == before; p++) {
        uint8_t s[ZT_MAX_STATE_BYTES];
        memset(s, 0, sizeof s);
        g->reset(g, s);
        int plies = 0;
        float banked = 0;
        for (;;) {
            check_state(g, s, &rng, obs);
            states++;
            int player = g->current_player(g, s);
            if (player == ZT_TERMINAL && zt_game_num_players(g) == 1) {
                /* a one-player game banks its score as it goes */
                CHECK(zt_game_score(g, s) >= banked, "%s: the score fell", g->title);
                break;
            }
            if (player == ZT_TERMINAL) {
                /* returns are zero-sum and within max_return: values in [-1, 1] */
                float r[2];
                g->returns(g, s, r);
                float v = zt_game_value_of(g, s, 0);
                CHECK(g->max_return > 0 && r[0] == -r[1] && fabsf(r[0]) <= g->max_return && v >= -1 &&
                          v <= 1,
                      "%s: returns %g %g beyond max_return %g", g->title, r[0], r[1], g->max_return);
                break;
            }
            if (zt_game_num_players(g) == 1) {
                float now = zt_game_score(g, s);
                CHECK(now >= banked, "%s: the score fell from %g to %g", g->title, banked, now);
                banked = now;
            }
            if (player == ZT_CHANCE) {
                int n = g->chance_outcomes(g, s, outcomes, probs);
                g->apply(g, s, outcomes[zt_rng_categorical(&rng, probs, n)]);
                continue;
            }
            int n = g->legal(g, s, actions);
            if (n <= 0) break;
            g->apply(g, s, actions[zt_rng_below(&rng, (uint32_t)n)]);
            plies++;
            CHECK(plies <= g->max_game_length, "%s: game longer than max_game_length %d", g->title,
                  g->max_game_length);
            if (plies > g->max_game_length) break;
        }
    }
    /* the spec names the same game */
    char spec[256];
    zt_game_spec(g, spec, sizeof spec);
    zt_game *again = NULL;
    CHECK(zt_game_from_spec(spec, &again) == ZT_OK, "%s: spec '%s': %s", g->title, spec,
          zt_error_message());
    if (again) {
        CHECK(strcmp(again->title, g->title) == 0 && again->state_size == g->state_size &&
                  again->num_actions == g->num_actions,
              "%s: spec '%s' gives %s", g->title, spec, again->title);
        zt_game_free(again);
    }
    printf("%-24s %6d playouts %8ld states checked  %s\n", g->title, playouts, states,
           zt_test_failures == before ? "ok" : "FAILED");
    free(obs);
    zt_game_free(g);
}

static zt_game *game_with(const char *name, const char *const *settings)
{
    zt_config *cfg = zt_config_new();
    for (int i = 0; settings && settings[i]; i++) zt_config_set(cfg, settings[i]);
    zt_game *g = NULL;
    zt_status st = zt_game_new(name, cfg, &g);
    zt_config_free(cfg);
    CHECK(st == ZT_OK, "%s: %s", name, zt_error_message());
    return g;
}

/* The position sets of an instance: their number, every file present in
 * the reference data, every judge `judge`. */
static void check_sets(const char *name, const char *const *settings, int want, zt_judge judge)
{
    zt_game *g = game_with(name, settings);
    if (!g) return;
    CHECK(g->def && strcmp(g->def->name, name) == 0, "%s: no registry entry", g->title);
    const zt_position_set *sets;
    int n = zt_game_position_sets(g, &sets);
    CHECK(n == want, "%s: %d position sets, want %d", g->title, n, want);
    for (int i = 0; i < n; i++) {
        char path[1024];
        CHECK(zt_data_find(NULL, sets[i].file, path, sizeof path), "%s: %s not found", g->title,
              sets[i].file);
        CHECK(sets[i].judge == judge, "%s: %s judged %d", g->title, sets[i].file,
              (int)sets[i].judge);
        CHECK(zt_game_positions_judge(g, path) == judge, "%s: %s", g->title, path);
        zt_solver *sv = NULL;
        CHECK(zt_solver_new(g, &sv) == ZT_OK, "%s has sets but no solver: %s", g->title,
              zt_error_message());
        zt_solver_free(sv);
    }
    /* A file of another name is judged as the game's sets are. */
    CHECK(zt_game_positions_judge(g, "/elsewhere/mine.txt") == (n ? judge : ZT_JUDGE_OPTIMAL),
          "%s: an unknown file's judge", g->title);
    zt_game_free(g);
}

/* Every baseline and default opponent of every game builds for it. */
static void check_players(void)
{
    for (int i = 0; i < zt_game_registry_count; i++) {
        const zt_game_def *def = zt_game_registry[i];
        zt_game *g = game_with(def->name, NULL);
        if (!g) continue;
        for (const zt_baseline *b = def->baselines; b && b->name; b++) {
            char spec[64];
            snprintf(spec, sizeof spec, "%s%s", b->name, b->takes_depth ? ":2" : "");
            zt_player *p = NULL;
            CHECK(zt_player_new(g, spec, &p) == ZT_OK && strcmp(p->name, spec) == 0,
                  "%s: baseline %s: %s", def->name, spec, zt_error_message());
            zt_player_free(p);
        }
        char list[256];
        snprintf(list, sizeof list, "%s", def->arena_opponents ? def->arena_opponents : "random");
        char *save = NULL;
        for (char *spec = strtok_r(list, ",", &save); spec; spec = strtok_r(NULL, ",", &save)) {
            zt_player *p = NULL;
            CHECK(zt_player_new(g, spec, &p) == ZT_OK, "%s: default opponent %s: %s", def->name,
                  spec, zt_error_message());
            zt_player_free(p);
        }
        zt_solver *sv = NULL;
        zt_status st = zt_solver_new(g, &sv);
        CHECK((st == ZT_OK) == (def->solver != NULL), "%s: solver %d", def->name, (int)st);
        zt_solver_free(sv);
        zt_game_free(g);
    }
}

int main(void)
{
    uint64_t seed = zt_test_seed(20261125);

    static const char *const k6[] = {"vertices=6", "k=3", NULL};
    static const char *const k5[] = {"vertices=5", "k=3", NULL};
    static const char *const k14[] = {"vertices=14", "k=4", NULL};
    static const char *const make[] = {"vertices=7", "k=3", "variant=make", NULL};
    test_game("tictactoe", NULL, 300, seed);
    test_game("connect4", NULL, 200, seed);
    test_game("sim", k6, 200, seed);
    test_game("sim", k5, 100, seed);
    test_game("sim", k14, 10, seed);
    test_game("sim", make, 50, seed);
    test_game("backgammon", NULL, 10, seed);
    test_game("2048", NULL, 50, seed);

    zt_game *g;
    CHECK(zt_game_new("chess", NULL, &g) == ZT_ERR_NOT_FOUND, "unknown game accepted");
    CHECK(strstr(zt_error_message(), "chess") != NULL, "message does not name the game");

    static const char *const k6_make[] = {"vertices=6", "k=3", "variant=make", NULL};
    static const char *const k7[] = {"vertices=7", "k=3", NULL};
    check_sets("tictactoe", NULL, 1, ZT_JUDGE_OPTIMAL);
    check_sets("connect4", NULL, 5, ZT_JUDGE_MISTAKES);
    check_sets("sim", k6, 1, ZT_JUDGE_OPTIMAL);
    check_sets("sim", k6_make, 0, ZT_JUDGE_OPTIMAL);
    check_sets("sim", k7, 0, ZT_JUDGE_OPTIMAL);
    check_sets("backgammon", NULL, 0, ZT_JUDGE_OPTIMAL);
    check_sets("2048", NULL, 0, ZT_JUDGE_OPTIMAL);
    check_players();

    return zt_test_finish("test_games");
}
