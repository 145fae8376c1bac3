/* A checkpoint's state.bin (zt_train_state_load, train/checkpoint.c): each
 * input is read as it is and again with its checksum made right, so that
 * mutations reach the checks behind the checksum. A state that loads saves
 * to the same bytes (a game spec holding a NUL byte is refused). */
#include "fuzz.h"
#include "train/train.h"

/* checkpoint.c's CHECKSUM_SEED; the seeds named ok-* fail the corpus replay
 * if it changes without this. */
#define STATE_CHECKSUM_SEED 0x7a74737461746531ULL

static void load(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_temp(data, size);
    zt_train_state s;
    if (zt_train_state_load(path, &s) != ZT_OK) return;
    fuzz_accepted++;
    FUZZ_CHECK(memchr(s.game, '\0', sizeof s.game) != NULL);
    FUZZ_CHECK(strlen(s.game) + 8 + 16 + 82 == size);
    /* Saved again, the same bytes (the format has one encoding). */
    FUZZ_CHECK(zt_train_state_save(&s, path) == ZT_OK);
    FILE *f = fopen(path, "rb");
    FUZZ_CHECK(f != NULL);
    uint8_t *back = malloc(size + 1);
    size_t n = fread(back, 1, size + 1, f);
    fclose(f);
    FUZZ_CHECK(n == size && memcmp(back, data, size) == 0);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool quiet;
    if (!quiet) fuzz_quiet(), quiet = true;
    load(data, size);
    if (size >= 8) {
        uint8_t *fixed = malloc(size);
        memcpy(fixed, data, size);
        fuzz_fix_checksum(fixed, size, STATE_CHECKSUM_SEED);
        if (memcmp(fixed, data, size) != 0) load(fixed, size);
        free(fixed);
    }
    return 0;
}
