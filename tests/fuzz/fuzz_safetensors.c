/* Safetensors files (nn/safetensors.h): the reader itself (zt_st_open and
 * every tensor of the file read at its own shape), weight files
 * (zt_net_file_info, zt_net_load) and optimizer state (zt_trainer_load) for
 * two tiny nets, an MLP and a resnet, whose files seed the corpus
 * (fuzz_corpus.c). Loading into a net of another architecture is refused;
 * a file that loads has exactly that net's architecture. */
#include "fuzz.h"
#include "nn/nn.h"
#include "nn/safetensors.h"

/* Also written by fuzz_corpus.c, which makes the seed files. */
static const char *const archs[] = {
    "mlp in=1x1x3 actions=2 value=scalar:2 width=3 layers=1 norm=layer",
    "resnet in=2x2x1 actions=3 value=wdl:2 ch=2 blocks=1 pol=1 valc=1",
};
#define NUM_NETS 2
static zt_net *nets[NUM_NETS];
static zt_trainer *trainers[NUM_NETS];
static const char *const game = "fuzzgame";

static void setup(void)
{
    if (nets[0]) return;
    fuzz_quiet();
    for (int i = 0; i < NUM_NETS; i++) {
        zt_net_config cfg;
        zt_train_config tc;
        zt_train_config_default(&tc);
        if (zt_net_config_parse(archs[i], &cfg) != ZT_OK ||
            zt_net_new(&cfg, "ref", ZT_PRECISION_FP32, 1, &nets[i]) != ZT_OK ||
            zt_trainer_new(nets[i], &tc, &trainers[i]) != ZT_OK) {
            fprintf(stderr, "fuzz: net '%s': %s\n", archs[i], zt_error_message());
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    const char *path = fuzz_write_temp(data, size);

    /* The loaders below open the file again themselves; they run only when
     * this first reading says they can get past the header, as the checks
     * before that point are the same code. */
    zt_st_file f;
    if (zt_st_open(path, &f) != ZT_OK) return 0;
    fuzz_accepted++;
    for (int i = 0; i < f.nentries; i++) {
        const zt_st_entry *e = &f.entries[i];
        FUZZ_CHECK(e->ndim >= 0 && e->ndim <= 4 && e->begin <= e->end);
        FUZZ_CHECK(zt_st_find(&f, e->name) != NULL);
        size_t count = 1;
        for (int d = 0; d < e->ndim; d++) count *= (size_t)e->shape[d];
        FUZZ_CHECK(count * sizeof(float) == e->end - e->begin);
        float *values = malloc(count ? count * sizeof(float) : 1);
        /* every tensor a parsed header lists can be read, unless it holds
         * a NaN or an infinity, which is refused as damage */
        zt_status rs = zt_st_read_tensor(&f, e->name, e->ndim, e->shape, values);
        FUZZ_CHECK(rs == ZT_OK || (rs == ZT_ERR_CORRUPT && (strstr(zt_error_message(), "NaN") ||
                                                           strstr(zt_error_message(), "infinity"))));
        free(values);
    }
    for (int i = 0; i < f.nmeta; i++) FUZZ_CHECK(zt_st_meta_get(&f, f.meta_keys[i]) != NULL);
    const char *format = zt_st_meta_get(&f, "format");
    bool weights = format && strcmp(format, "zeroth-weights") == 0;
    bool optimizer = format && strcmp(format, "zeroth-optimizer") == 0;
    zt_st_close(&f);

    zt_net_config cfg;
    char file_game[64];
    if (weights && zt_net_file_info(path, &cfg, file_game, sizeof file_game) == ZT_OK) {
        FUZZ_CHECK(zt_net_config_check(&cfg) == ZT_OK);
        char arch[256];
        zt_net_config_format(&cfg, arch, sizeof arch);
        for (int i = 0; i < NUM_NETS; i++)
            if (zt_net_load(nets[i], game, path) == ZT_OK)
                FUZZ_CHECK(strcmp(arch, archs[i]) == 0 && strcmp(file_game, game) == 0);
    }
    for (int i = 0; i < NUM_NETS && optimizer; i++) (void)zt_trainer_load(trainers[i], path);
    return 0;
}
