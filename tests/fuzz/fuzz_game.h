/* The body of the game harnesses (fuzz_tictactoe.c, fuzz_connect4.c,
 * fuzz_sim.c, fuzz_backgammon.c, fuzz_g2048.c): a harness defines FUZZ_GAME_SPECS, the game
 * specs it fuzzes, and includes this file.
 *
 * Input: one byte choosing the game among the specs, then the position text
 * (to the first newline) for from_text, then the action text for
 * action_from_text. An accepted position must hold together: to_text
 * reads back as the same state, so does its compact encoding, its legal
 * actions are increasing and in range, and every interface function runs
 * on it. An accepted action is an action of the game (a chance outcome at
 * a chance node); a legal one writes back (action_to_text) as text that
 * reads as the same action, and is played. */
#include <math.h>

#include "fuzz.h"
#include "game/game.h"

static const char *const specs[] = {FUZZ_GAME_SPECS};
#define NUM_SPECS ((int)(sizeof specs / sizeof specs[0]))
static zt_game *games[NUM_SPECS];
static float *obs[NUM_SPECS];

static void setup(void)
{
    if (games[0]) return;
    fuzz_quiet();
    for (int i = 0; i < NUM_SPECS; i++) {
        if (zt_game_from_spec(specs[i], &games[i]) != ZT_OK) {
            fprintf(stderr, "fuzz: game '%s': %s\n", specs[i], zt_error_message());
            abort();
        }
        const zt_game *g = games[i];
        obs[i] = malloc(sizeof(float) * (size_t)zt_game_obs_size(g));
    }
}

/* Runs every read-only function of the interface on s and checks what can
 * be checked without knowing the game. */
static void exercise(const zt_game *g, float *ob, const void *s)
{
    uint8_t again[ZT_MAX_STATE_BYTES], code[ZT_MAX_STATE_BYTES], code2[ZT_MAX_STATE_BYTES];
    char text[ZT_MAX_TEXT], board[4096];
    g->to_text(g, s, text, sizeof text);
    FUZZ_CHECK(g->from_text(g, text, again) == ZT_OK);
    g->encode(g, s, code);
    g->encode(g, again, code2);
    FUZZ_CHECK(memcmp(code, code2, g->compact_size) == 0);
    FUZZ_CHECK(g->hash(g, s) == g->hash(g, again));
    FUZZ_CHECK(g->decode(g, code, again) == ZT_OK);
    g->encode(g, again, code2);
    FUZZ_CHECK(memcmp(code, code2, g->compact_size) == 0);
    g->render(g, s, board, sizeof board);

    int player = g->current_player(g, s);
    FUZZ_CHECK(player == 0 || player == 1 || player == ZT_CHANCE || player == ZT_TERMINAL);
    if (player == ZT_TERMINAL) {
        float r[2];
        g->returns(g, s, r);
        if (zt_game_num_players(g) == 1) /* a score banked as it went */
            FUZZ_CHECK(isfinite(r[0]) && r[0] >= 0 && r[1] == 0);
        else
            FUZZ_CHECK(isfinite(r[0]) && r[0] == -r[1] && fabsf(r[0]) <= g->max_return);
        return;
    }
    if (player == ZT_CHANCE) {
        int outcomes[ZT_MAX_CHANCE_OUTCOMES];
        float probs[ZT_MAX_CHANCE_OUTCOMES], sum = 0;
        int n = g->chance_outcomes(g, s, outcomes, probs);
        FUZZ_CHECK(n >= 1 && n <= g->max_chance_outcomes);
        for (int i = 0; i < n; i++) sum += probs[i];
        FUZZ_CHECK(fabsf(sum - 1) < 1e-4f);
        return;
    }
    uint16_t legal[ZT_MAX_ACTIONS];
    int n = g->legal(g, s, legal);
    FUZZ_CHECK(n >= 0 && n <= g->num_actions);
    for (int i = 0; i < n; i++)
        FUZZ_CHECK(legal[i] < g->num_actions && (!i || legal[i - 1] < legal[i]));
    g->observe(g, s, ob);
    /* a few symmetries spread over them all (Sim has n! of them) */
    int step = g->num_symmetries / 8 > 1 ? g->num_symmetries / 8 : 1;
    for (int k = 1; k < g->num_symmetries; k += step) {
        uint8_t sym[ZT_MAX_STATE_BYTES];
        g->sym_state(g, k, s, sym);
        for (int i = 0; i < n; i++) {
            int a = g->sym_action(g, k, legal[i]);
            FUZZ_CHECK(a >= 0 && a < g->num_actions);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size < 1) return 0;
    int which = data[0] % NUM_SPECS;
    const zt_game *g = games[which];
    char *text = fuzz_text(data + 1, size - 1);
    char *action_text = strchr(text, '\n');
    if (action_text) *action_text++ = '\0';

    uint8_t s[ZT_MAX_STATE_BYTES];
    if (g->from_text(g, text, s) == ZT_OK) {
        fuzz_accepted++;
        exercise(g, obs[which], s);
    } else {
        g->reset(g, s);
    }
    int a;
    if (action_text && g->action_from_text(g, s, action_text, &a) == ZT_OK) {
        int player = g->current_player(g, s);
        if (player == ZT_CHANCE) {
            int outcomes[ZT_MAX_CHANCE_OUTCOMES];
            float probs[ZT_MAX_CHANCE_OUTCOMES];
            int n = g->chance_outcomes(g, s, outcomes, probs), found = 0;
            for (int i = 0; i < n; i++) found |= outcomes[i] == a;
            FUZZ_CHECK(found);
            g->apply(g, s, a);
            exercise(g, obs[which], s);
        } else {
            /* An action of the game, legal or not, also after the end (the
             * caller checks legality, as `zeroth play` does); a legal one
             * reads back from its text. */
            FUZZ_CHECK(a >= 0 && a < g->num_actions);
            uint8_t mask[ZT_MAX_ACTIONS];
            zt_game_legal_mask(g, s, mask);
            if (mask[a]) {
                char back[256];
                int b;
                g->action_to_text(g, s, a, back, sizeof back);
                FUZZ_CHECK(g->action_from_text(g, s, back, &b) == ZT_OK && b == a);
                g->apply(g, s, a);
                exercise(g, obs[which], s);
            }
        }
    }
    free(text);
    return 0;
}
