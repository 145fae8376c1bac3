/* Tests of the weight and optimizer-state files: save -> load gives
 * bit-identical outputs and training continues bit-identically; truncated,
 * corrupt, wrong-architecture and wrong-game files, and hash-less files
 * holding a NaN or an infinity, are refused with a
 * one-line message naming the problem; python3 (if present) parses the
 * header with only its standard library. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "nn/nn.h"

#include "zt_test.h"

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        zt_status s_ = (expr);                                                                     \
        CHECK(s_ == ZT_OK, "%s", zt_error_message());                                              \
    } while (0)

static uint64_t seed;
static char dir[64];

static const char *path_in(const char *name)
{
    static char buf[4][128];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static zt_net_config resnet_config(void)
{
    zt_net_config c;
    zt_net_config_default(&c, 3, 4, 2, 12);
    c.channels = 8;
    c.blocks = 2;
    c.value_hidden = 8;
    return c;
}

static zt_net *make_net(const zt_net_config *c, uint64_t stream)
{
    zt_net *net = NULL;
    CHECK_OK(zt_net_new(c, "ref", ZT_PRECISION_FP32, 1, &net));
    zt_rng r;
    zt_rng_seed(&r, seed, stream);
    zt_net_init(net, &r);
    /* Non-trivial running statistics, so that losing them would show. */
    for (int i = 0; i < zt_net_tensor_count(net); i++) {
        zt_net_tensor t = zt_net_tensor_at(net, i);
        bool var = strstr(t.name, "running_var") != NULL;
        if (!t.trainable)
            for (size_t e = 0; e < t.count; e++)
                t.data[e] = var ? 0.5f + (float)zt_rng_uniform(&r) : (float)(0.2 * zt_rng_normal(&r));
    }
    zt_net_params_changed(net);
    return net;
}

typedef struct batch_data {
    float obs[16 * 24], policy[16 * 12], value[16];
    uint8_t legal[16 * 12];
} batch_data;

static zt_train_batch make_batch(batch_data *d, zt_rng *r)
{
    for (int i = 0; i < 16 * 24; i++) d->obs[i] = (float)zt_rng_below(r, 2);
    memset(d->policy, 0, sizeof d->policy);
    for (int n = 0; n < 16; n++) {
        for (int a = 0; a < 12; a++) d->legal[n * 12 + a] = 1;
        d->policy[n * 12 + zt_rng_below(r, 12)] = 1;
        d->value[n] = (float)(zt_rng_uniform(r) * 2 - 1);
    }
    return (zt_train_batch){.B = 16,
                            .obs = d->obs,
                            .policy_target = d->policy,
                            .legal = d->legal,
                            .value_target = d->value};
}

static bool same_outputs(zt_net *a, zt_net *b, const float *obs, int B)
{
    float pa[16 * 12], va[16], pb[16 * 12], vb[16];
    CHECK_OK(zt_net_forward(a, B, obs, pa, va));
    CHECK_OK(zt_net_forward(b, B, obs, pb, vb));
    return memcmp(pa, pb, sizeof(float) * 12 * B) == 0 && memcmp(va, vb, sizeof(float) * B) == 0;
}

static void test_round_trip(void)
{
    zt_net_config c = resnet_config();
    zt_net *a = make_net(&c, 1), *b = make_net(&c, 2);
    zt_rng r;
    zt_rng_seed(&r, seed, 3);
    batch_data d;
    make_batch(&d, &r);
    CHECK(!same_outputs(a, b, d.obs, 16), "differently initialised nets agree");
    CHECK_OK(zt_net_save(a, "connect4", path_in("w.safetensors")));
    CHECK_OK(zt_net_load(b, "connect4", path_in("w.safetensors")));
    CHECK(same_outputs(a, b, d.obs, 16), "outputs differ after save and load");

    zt_net_config info;
    char game[32];
    CHECK_OK(zt_net_file_info(path_in("w.safetensors"), &info, game, sizeof game));
    CHECK(memcmp(&info, &c, sizeof c) == 0 && strcmp(game, "connect4") == 0, "file info");

    /* Optimizer state: train a, save both files, load into fresh copies; the
     * next steps must match bit for bit. */
    for (int opt = 0; opt < 2; opt++) {
        zt_train_config tc;
        zt_train_config_default(&tc);
        tc.optimizer = opt ? ZT_OPT_ADAMW : ZT_OPT_SGD;
        tc.lr = opt ? 1e-3 : 0.01;
        zt_trainer *ta, *tb;
        zt_net *x = make_net(&c, 4), *y = make_net(&c, 5);
        CHECK_OK(zt_trainer_new(x, &tc, &ta));
        CHECK_OK(zt_trainer_new(y, &tc, &tb));
        zt_train_batch batch = make_batch(&d, &r);
        zt_train_losses la, lb;
        for (int s = 0; s < 3; s++) CHECK_OK(zt_trainer_step(ta, &batch, &la));
        CHECK_OK(zt_net_save(x, "connect4", path_in("x.safetensors")));
        CHECK_OK(zt_trainer_save(ta, path_in("x.optim.safetensors")));
        CHECK_OK(zt_net_load(y, "connect4", path_in("x.safetensors")));
        CHECK_OK(zt_trainer_load(tb, path_in("x.optim.safetensors")));
        CHECK(zt_trainer_steps(tb) == 3, "step count %ld after load", zt_trainer_steps(tb));
        for (int s = 0; s < 2; s++) {
            CHECK_OK(zt_trainer_step(ta, &batch, &la));
            CHECK_OK(zt_trainer_step(tb, &batch, &lb));
        }
        CHECK(la.total == lb.total, "%s: resumed loss %.9g vs %.9g", opt ? "adamw" : "sgd",
              la.total, lb.total);
        CHECK(same_outputs(x, y, d.obs, 16), "%s: resumed training diverged",
              opt ? "adamw" : "sgd");
        /* An SGD trainer refuses AdamW state. */
        if (opt == 1) {
            zt_train_config sgd = tc;
            sgd.optimizer = ZT_OPT_SGD;
            zt_trainer *ts;
            CHECK_OK(zt_trainer_new(y, &sgd, &ts));
            CHECK(zt_trainer_load(ts, path_in("x.optim.safetensors")) == ZT_ERR_INVALID,
                  "sgd loaded adamw state");
            CHECK(strstr(zt_error_message(), "adamw") != NULL, "message '%s'",
                  zt_error_message());
            zt_trainer_free(ts);
        }
        zt_trainer_free(ta);
        zt_trainer_free(tb);
        zt_net_free(x);
        zt_net_free(y);
    }
    zt_net_free(a);
    zt_net_free(b);
}

/* Loading `name` into `net` must fail with `want` and a one-line message
 * containing `word`, leaving the net's outputs unchanged. */
static void expect_refused(zt_net *net, const char *game, const char *name, zt_status want,
                           const char *word, const float *obs)
{
    float p0[4 * 12], v0[4], p1[4 * 12], v1[4];
    CHECK_OK(zt_net_forward(net, 4, obs, p0, v0));
    zt_status s = zt_net_load(net, game, path_in(name));
    const char *msg = zt_error_message();
    printf("refused %s: %s\n", name, msg);
    CHECK(s == want, "%s: status %s, want %s (%s)", name, zt_status_name(s), zt_status_name(want),
          msg);
    CHECK(strstr(msg, word) != NULL, "%s: message '%s' lacks '%s'", name, msg, word);
    CHECK(strchr(msg, '\n') == NULL, "%s: message has several lines", name);
    CHECK_OK(zt_net_forward(net, 4, obs, p1, v1));
    CHECK(memcmp(p0, p1, sizeof p0) == 0 && memcmp(v0, v1, sizeof v0) == 0,
          "%s: a refused load changed the net", name);
}

/* The first occurrence of `needle` in hay[0, n) (memmem is a GNU extension). */
static char *find_bytes(char *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(hay + i, needle, k) == 0) return hay + i;
    return NULL;
}

static void write_bytes(const char *name, const void *data, size_t len)
{
    CHECK_OK(zt_write_file_atomic(path_in(name), data, len));
}

static void test_refusals(void)
{
    zt_net_config c = resnet_config();
    zt_net *net = make_net(&c, 6);
    zt_rng r;
    zt_rng_seed(&r, seed, 7);
    batch_data d;
    make_batch(&d, &r);
    CHECK_OK(zt_net_save(net, "connect4", path_in("good.safetensors")));
    char *bytes;
    size_t len;
    CHECK_OK(zt_read_file(path_in("good.safetensors"), &bytes, &len));
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)(unsigned char)bytes[i] << (8 * i);
    CHECK(hlen % 8 == 0 && 8 + hlen < len, "header length %llu", (unsigned long long)hlen);

    zt_net *other = make_net(&c, 8);
    expect_refused(other, "connect4", "missing.safetensors", ZT_ERR_NOT_FOUND, "missing", d.obs);
    write_bytes("short.safetensors", bytes, 5);
    expect_refused(other, "connect4", "short.safetensors", ZT_ERR_CORRUPT, "truncated", d.obs);
    write_bytes("cut_header.safetensors", bytes, 8 + hlen / 2);
    expect_refused(other, "connect4", "cut_header.safetensors", ZT_ERR_CORRUPT, "truncated", d.obs);
    write_bytes("cut_data.safetensors", bytes, len - 100);
    expect_refused(other, "connect4", "cut_data.safetensors", ZT_ERR_CORRUPT, "truncated", d.obs);

    char *bad = zt_xmalloc(len);
    memcpy(bad, bytes, len);
    bad[len - 7] ^= 0x10; /* one bit of one weight */
    write_bytes("bitflip.safetensors", bad, len);
    expect_refused(other, "connect4", "bitflip.safetensors", ZT_ERR_CORRUPT, "corrupt", d.obs);

    memcpy(bad, bytes, len);
    char *json = bad + 8;
    char *brace = memchr(json, ':', hlen);
    *brace = ';'; /* malformed JSON */
    write_bytes("badjson.safetensors", bad, len);
    expect_refused(other, "connect4", "badjson.safetensors", ZT_ERR_CORRUPT, "corrupt header",
                   d.obs);

    memcpy(bad, bytes, len);
    bad[7] = 0x40; /* a header length of exabytes */
    write_bytes("badlen.safetensors", bad, len);
    expect_refused(other, "connect4", "badlen.safetensors", ZT_ERR_CORRUPT, "header length", d.obs);

    memcpy(bad, bytes, len);
    char *f32 = find_bytes(json, hlen, "\"F32\"");
    memcpy(f32, "\"F16\"", 5);
    write_bytes("f16.safetensors", bad, len);
    expect_refused(other, "connect4", "f16.safetensors", ZT_ERR_UNSUPPORTED, "F16", d.obs);

    memcpy(bad, bytes, len);
    char *off = find_bytes(json, hlen, "\"data_offsets\":[0,");
    CHECK(off != NULL, "first tensor's offsets not found");
    if (off) {
        off[16] = '4'; /* the first tensor now starts 4 bytes in: a gap */
        write_bytes("gap.safetensors", bad, len);
        expect_refused(other, "connect4", "gap.safetensors", ZT_ERR_CORRUPT, "offsets", d.obs);
    }

    /* Without its data_hash (another program's file) a changed weight
     * loads, but a NaN or an infinity does not. */
    memcpy(bad, bytes, len);
    char *hash_key = find_bytes(json, hlen, "\"data_hash\"");
    CHECK(hash_key != NULL, "no data_hash in the header");
    if (hash_key) {
        memcpy(hash_key, "\"data_hasx\"", 11);
        float x = 0.125f;
        memcpy(bad + len - 8, &x, 4);
        write_bytes("nohash.safetensors", bad, len);
        zt_net *probe = make_net(&c, 10);
        CHECK(zt_net_load(probe, "connect4", path_in("nohash.safetensors")) == ZT_OK,
              "a hash-less file with finite weights: %s", zt_error_message());
        zt_net_free(probe);
        x = NAN;
        memcpy(bad + len - 8, &x, 4);
        write_bytes("nan.safetensors", bad, len);
        expect_refused(other, "connect4", "nan.safetensors", ZT_ERR_CORRUPT, "non-finite", d.obs);
        x = -INFINITY;
        memcpy(bad + 8 + hlen, &x, 4);
        memcpy(bad + len - 8, &(float){0.5f}, 4);
        write_bytes("inf.safetensors", bad, len);
        expect_refused(other, "connect4", "inf.safetensors", ZT_ERR_CORRUPT, "infinity", d.obs);
    }

    expect_refused(other, "tictactoe", "good.safetensors", ZT_ERR_INVALID, "game 'connect4'",
                   d.obs);
    zt_net_config c2 = c;
    c2.channels = 6;
    zt_net *narrow = make_net(&c2, 9);
    expect_refused(narrow, "connect4", "good.safetensors", ZT_ERR_INVALID, "architecture", d.obs);
    zt_net_free(narrow);

    /* The optimizer-state file is not a weight file, and vice versa. */
    zt_train_config tc;
    zt_train_config_default(&tc);
    zt_trainer *t;
    CHECK_OK(zt_trainer_new(net, &tc, &t));
    CHECK_OK(zt_trainer_save(t, path_in("optim.safetensors")));
    expect_refused(other, "connect4", "optim.safetensors", ZT_ERR_INVALID, "not a Zeroth weight",
                   d.obs);
    CHECK(zt_trainer_load(t, path_in("good.safetensors")) == ZT_ERR_INVALID,
          "weights loaded as optimizer state");
    zt_trainer_free(t);

    /* The good file still loads. */
    CHECK_OK(zt_net_load(other, "connect4", path_in("good.safetensors")));
    CHECK(same_outputs(net, other, d.obs, 4), "good file after the refusals");
    free(bad);
    free(bytes);
    zt_net_free(other);
    zt_net_free(net);
}

/* The file opens with Python's standard library alone: the header is JSON,
 * the offsets tile the data, the metadata names the architecture. */
static void test_python_reader(void)
{
    if (system("command -v python3 >/dev/null 2>&1") != 0) {
        printf("python3 not found: skipping the Python reader check\n");
        return;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import json,struct,sys\n"
             "b=open(sys.argv[1],'rb').read()\n"
             "n=struct.unpack('<Q',b[:8])[0]\n"
             "h=json.loads(b[8:8+n])\n"
             "m=h.pop('__metadata__')\n"
             "assert m['game']=='connect4' and m['architecture'].startswith('resnet')\n"
             "end=max(v['data_offsets'][1] for v in h.values())\n"
             "assert 8+n+end==len(b)\n"
             "w=h['stem.conv.weight']\n"
             "assert w['dtype']=='F32' and w['shape']==[8,3,3,2]\n"
             "\" %s",
             path_in("good.safetensors"));
    CHECK(system(cmd) == 0, "python3 could not read the file");
}

int main(void)
{
    seed = zt_test_seed(7);
    snprintf(dir, sizeof dir, "/tmp/zt_nn_file_XXXXXX");
    if (!mkdtemp(dir)) {
        printf("cannot create a temporary directory\n");
        return 1;
    }
    test_round_trip();
    test_refusals();
    test_python_reader();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
    return zt_test_finish("test_nn_file");
}
