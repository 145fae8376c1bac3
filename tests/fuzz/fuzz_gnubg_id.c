/* gnubg position ids (zt_bg_id_decode, zt_bg_position). Input: the id, then
 * after a newline an optional roll ("AB"). A decoded board encodes to an id
 * that decodes to the same board; a position built from an id and a roll
 * lists plays that all have a notation. */
#include "fuzz.h"
#include "game/backgammon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    char *roll = strchr(text, '\n');
    if (roll) *roll++ = '\0';

    uint8_t mover[25], opp[25];
    if (zt_bg_id_decode(text, mover, opp) == ZT_OK) {
        fuzz_accepted++;
        char id[BG_ID_LEN + 1];
        uint8_t mover2[25], opp2[25];
        zt_bg_id_encode(mover, opp, id);
        FUZZ_CHECK(strlen(id) == BG_ID_LEN);
        FUZZ_CHECK(zt_bg_id_decode(id, mover2, opp2) == ZT_OK);
        FUZZ_CHECK(memcmp(mover, mover2, sizeof mover) == 0 && memcmp(opp, opp2, sizeof opp) == 0);
    }
    static bg_state s; /* the play list is large: off the stack */
    static bg_playlist plays;
    if (zt_bg_position(text, roll, &s) == ZT_OK) {
        if (s.n_dice > 0) {
            zt_bg_plays(&s, &plays);
            FUZZ_CHECK(plays.count >= 0 && plays.count <= BG_MAX_PLAYS);
            for (int i = 0; i < plays.count; i++) {
                char notation[128];
                zt_bg_play_notation(&s, &plays.plays[i], notation, sizeof notation);
                FUZZ_CHECK(notation[0] != '\0');
            }
            uint16_t legal[BG_NUM_ACTIONS];
            int n = zt_bg_legal(&s, legal);
            FUZZ_CHECK(n >= 0 && n <= BG_NUM_ACTIONS);
        }
        (void)zt_bg_is_race(&s);
    }
    free(text);
    return 0;
}
