/* The compact record of one position (layout in record.h). */
#include "replay/record.h"

#include <math.h>
#include <string.h>

#include "replay/replay.h"

void zt_record_layout_init(zt_record_layout *l, const zt_game *g)
{
    l->compact_size = g->compact_size;
    l->num_actions = g->num_actions;
    l->action_bytes = g->num_actions <= 256 ? 1 : 2;
    /* The encoder picks sparse only when it is shorter than dense, and dense
     * never exceeds num_actions - 1 weights. */
    l->max_bytes = 1 + 2 + g->compact_size + 2 + 2 * (size_t)(g->num_actions - 1) +
                   (size_t)l->action_bytes + 2 + 1;
    ZT_ASSERT(g->num_actions >= 1 && g->num_actions <= ZT_MAX_ACTIONS);
    ZT_ASSERT(g->compact_size <= ZT_MAX_STATE_BYTES);
}

/* ---- IEEE 754 binary16 ---- */

uint16_t zt_record_half_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u);
    if (ax >= 0x477ff000u) return sign | 0x7c00u; /* rounds past 65504: infinity */
    if (ax < 0x38800000u) {
        /* Below 2^-14: a subnormal half, units of 2^-24 (rounded to even by
         * the default rounding mode). */
        float af;
        memcpy(&af, &ax, sizeof af);
        return sign | (uint16_t)lrintf(af * 16777216.0f);
    }
    uint32_t mant = ax & 0x7fffffu;
    uint32_t h = ((ax >> 23) - 127u + 15u) << 10 | mant >> 13;
    uint32_t rest = mant & 0x1fffu;
    /* Round to nearest, ties to even; a carry into the exponent is right. */
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return sign | (uint16_t)h;
}

float zt_record_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        float v = ldexpf((float)mant, -24);
        return sign ? -v : v;
    }
    if (exp == 31)
        bits = sign | 0x7f800000u | mant << 13;
    else
        bits = sign | (exp - 15u + 127u) << 23 | mant << 13;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* ---- quantisation ---- */

void zt_record_quantise(const double *w, int n, uint16_t *q)
{
    double total = 0;
    for (int i = 0; i < n; i++) total += w[i];
    ZT_ASSERT(n >= 1 && total > 0);
    double frac[ZT_MAX_ACTIONS];
    uint32_t sum = 0;
    for (int i = 0; i < n; i++) {
        double x = w[i] / total * ZT_REPLAY_WEIGHT_SUM;
        double fl = floor(x);
        if (fl > ZT_REPLAY_WEIGHT_SUM) fl = ZT_REPLAY_WEIGHT_SUM;
        q[i] = (uint16_t)fl;
        frac[i] = x - fl;
        sum += q[i];
    }
    /* Hamilton's largest-remainder method: the units lost to flooring go to
     * the largest fractional parts (ties to the lowest action), so every
     * weight stays within one unit of its share. Rounding of x can leave the
     * floors summing one past the total; then the smallest parts give back. */
    while (sum < ZT_REPLAY_WEIGHT_SUM) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (frac[i] >= 0 && (best < 0 || frac[i] > frac[best])) best = i;
        ZT_ASSERT(best >= 0);
        q[best]++;
        frac[best] = -1;
        sum++;
    }
    while (sum > ZT_REPLAY_WEIGHT_SUM) {
        int worst = -1;
        for (int i = 0; i < n; i++)
            if (q[i] > 0 && frac[i] >= 0 && (worst < 0 || frac[i] < frac[worst])) worst = i;
        ZT_ASSERT(worst >= 0);
        q[worst]--;
        frac[worst] = -1;
        sum--;
    }
}

/* ---- encoding ---- */

static size_t put_varint(uint8_t *p, int v)
{
    ZT_ASSERT(v >= 0 && v <= RECORD_MAX_COUNT);
    if (v < 128) {
        p[0] = (uint8_t)v;
        return 1;
    }
    p[0] = (uint8_t)(0x80 | (v & 0x7f));
    p[1] = (uint8_t)(v >> 7);
    return 2;
}

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

size_t zt_record_encode(const zt_record_layout *l, const zt_game *g, const void *state,
                        const float *policy, float root_value, bool full_search, uint8_t *out)
{
    return zt_record_encode_step(l, g, state, policy, root_value, full_search, -1, 0.0f, out);
}

size_t zt_record_encode_step(const zt_record_layout *l, const zt_game *g, const void *state,
                             const float *policy, float root_value, bool full_search, int action,
                             float reward, uint8_t *out)
{
    return zt_record_encode_full(l, g, state, policy, root_value, full_search, action, reward, 0.0f,
                                 out);
}

size_t zt_record_encode_full(const zt_record_layout *l, const zt_game *g, const void *state,
                             const float *policy, float root_value, bool full_search, int action,
                             float reward, float surprise, uint8_t *out)
{
    /* a player's position, or a chance state as a value target alone */
    ZT_ASSERT(g->current_player(g, state) >= 0 ||
              (zt_game_observer(g, state) >= 0 && !full_search && action < 0));
    ZT_ASSERT(isfinite(root_value));
    ZT_ASSERT(isfinite(surprise) && surprise >= 0);
    uint8_t flags = full_search ? ZT_REPLAY_FULL_SEARCH : 0;
    float units = surprise * ZT_RECORD_SURPRISE_SCALE;
    uint8_t surprise_byte = units >= 254.5f ? 255 : (uint8_t)lrintf(units);
    if (full_search && surprise_byte > 0) flags |= RECORD_SURPRISE;
    if (action >= 0) {
        ZT_ASSERT(action < l->num_actions && isfinite(reward));
        flags |= RECORD_ACTION;
        /* a reward the half float rounds to 0 is stored as none */
        if (zt_record_half_from_float(reward) & 0x7fffu) flags |= RECORD_REWARD;
    } else {
        ZT_ASSERT(reward == 0);
    }
    int count = 0;
    uint16_t legal[ZT_MAX_ACTIONS], q[ZT_MAX_ACTIONS];
    int num_legal = 0, nonzero = 0;
    if (full_search) {
        ZT_ASSERT(policy != NULL);
        num_legal = g->legal(g, state, legal);
        ZT_ASSERT(num_legal >= 1);
        /* Illegal actions must carry no weight: a search never visits them,
         * and a silent renormalisation would hide a bug upstream. */
        uint8_t mask[ZT_MAX_ACTIONS];
        zt_game_legal_mask(g, state, mask);
        for (int a = 0; a < l->num_actions; a++)
            ZT_ASSERT(isfinite(policy[a]) && policy[a] >= 0 && (mask[a] || policy[a] == 0));
        double w[ZT_MAX_ACTIONS], legal_sum = 0;
        for (int i = 0; i < num_legal; i++) {
            w[i] = policy[legal[i]];
            legal_sum += w[i];
        }
        ZT_ASSERT(legal_sum > 0);
        zt_record_quantise(w, num_legal, q);
        for (int i = 0; i < num_legal; i++) nonzero += q[i] > 0;
        size_t dense = 2 * (size_t)(num_legal - 1);
        size_t sparse = (size_t)nonzero * (size_t)l->action_bytes + 2 * (size_t)(nonzero - 1);
        if (sparse < dense) {
            flags |= RECORD_SPARSE;
            count = nonzero;
        } else {
            count = num_legal - 1;
        }
    }
    uint8_t *p = out;
    *p++ = flags;
    p += put_varint(p, count);
    g->encode(g, state, p);
    p += l->compact_size;
    put_u16(p, zt_record_half_from_float(root_value));
    p += 2;
    if (flags & RECORD_SPARSE) {
        for (int i = 0; i < num_legal; i++) {
            if (!q[i]) continue;
            if (l->action_bytes == 1)
                *p++ = (uint8_t)legal[i];
            else {
                put_u16(p, legal[i]);
                p += 2;
            }
        }
        int written = 0;
        for (int i = 0; i < num_legal && written < count - 1; i++) {
            if (!q[i]) continue;
            put_u16(p, q[i]);
            p += 2;
            written++;
        }
    } else {
        for (int i = 0; i < count; i++) {
            put_u16(p, q[i]);
            p += 2;
        }
    }
    if (flags & RECORD_ACTION) {
        if (l->action_bytes == 1)
            *p++ = (uint8_t)action;
        else {
            put_u16(p, (uint16_t)action);
            p += 2;
        }
    }
    if (flags & RECORD_REWARD) {
        put_u16(p, zt_record_half_from_float(reward));
        p += 2;
    }
    if (flags & RECORD_SURPRISE) *p++ = surprise_byte;
    size_t len = (size_t)(p - out);
    ZT_ASSERT(len <= l->max_bytes);
    return len;
}

size_t zt_record_length(const zt_record_layout *l, const uint8_t *p, size_t avail)
{
    if (avail < 2) return 0;
    uint8_t flags = p[0];
    if (flags & ~RECORD_KNOWN_FLAGS) return 0;
    size_t head = 2;
    int count = p[1] & 0x7f;
    if (p[1] & 0x80) {
        if (avail < 3 || p[2] & 0x80) return 0;
        count |= p[2] << 7;
        head = 3;
    }
    size_t policy;
    if (!(flags & ZT_REPLAY_FULL_SEARCH)) {
        if (count != 0 || (flags & RECORD_SPARSE)) return 0;
        policy = 0;
    } else if (flags & RECORD_SPARSE) {
        if (count < 1 || count > l->num_actions) return 0;
        policy = (size_t)count * (size_t)l->action_bytes + 2 * (size_t)(count - 1);
    } else {
        if (count > l->num_actions - 1) return 0;
        policy = 2 * (size_t)count;
    }
    if ((flags & RECORD_REWARD) && !(flags & RECORD_ACTION)) return 0;
    if ((flags & RECORD_SURPRISE) && !(flags & ZT_REPLAY_FULL_SEARCH)) return 0;
    size_t step = (flags & RECORD_ACTION ? (size_t)l->action_bytes : 0) +
                  (flags & RECORD_REWARD ? 2 : 0) + (flags & RECORD_SURPRISE ? 1 : 0);
    size_t len = head + l->compact_size + 2 + policy + step;
    return len <= avail ? len : 0;
}

static zt_status decode_policy(const zt_record_layout *l, const zt_game *g, const void *state,
                               uint8_t flags, int count, const uint8_t **qp, zt_record_view *view);

zt_status zt_record_decode(const zt_record_layout *l, const zt_game *g, const uint8_t *p,
                           size_t len, void *state, zt_record_view *view)
{
    ZT_ASSERT(zt_record_length(l, p, len) == len);
    uint8_t flags = p[0];
    size_t head = (p[1] & 0x80) ? 3 : 2;
    int count = (p[1] & 0x7f) | ((p[1] & 0x80) ? p[2] << 7 : 0);
    const uint8_t *q = p + head;
    ZT_TRY(g->decode(g, q, state));
    if (g->current_player(g, state) < 0 &&
        (zt_game_observer(g, state) < 0 || (flags & (ZT_REPLAY_FULL_SEARCH | RECORD_ACTION))))
        return zt_fail(ZT_ERR_CORRUPT, "replay record of a terminal position, or of a chance "
                       "position with a policy or an action");
    q += l->compact_size;
    view->flags = flags;
    view->root_value = zt_record_half_to_float(get_u16(q));
    if (!isfinite(view->root_value))
        return zt_fail(ZT_ERR_CORRUPT, "replay record with a non-finite root value");
    q += 2;
    view->num_pairs = 0;
    view->action = -1;
    view->reward = 0;
    view->surprise = zt_record_surprise(p, len);
    if ((flags & RECORD_SURPRISE) && view->surprise == 0)
        return zt_fail(ZT_ERR_CORRUPT, "replay record with a zero surprise stored");
    if (flags & ZT_REPLAY_FULL_SEARCH) ZT_TRY(decode_policy(l, g, state, flags, count, &q, view));
    if (flags & RECORD_ACTION) {
        int a = l->action_bytes == 1 ? *q : get_u16(q);
        q += l->action_bytes;
        uint8_t mask[ZT_MAX_ACTIONS];
        zt_game_legal_mask(g, state, mask);
        if (a >= l->num_actions || !mask[a])
            return zt_fail(ZT_ERR_CORRUPT, "replay record with an illegal action taken %d", a);
        view->action = a;
    }
    if (flags & RECORD_REWARD) {
        view->reward = zt_record_half_to_float(get_u16(q));
        if (!isfinite(view->reward) || view->reward == 0)
            return zt_fail(ZT_ERR_CORRUPT, "replay record with a bad reward");
    }
    return ZT_OK;
}

/* The policy pairs of a record with a full search, from *qp on. */
static zt_status decode_policy(const zt_record_layout *l, const zt_game *g, const void *state,
                               uint8_t flags, int count, const uint8_t **qp, zt_record_view *view)
{
    const uint8_t *q = *qp;
    uint16_t legal[ZT_MAX_ACTIONS];
    int num_legal = g->legal(g, state, legal);
    uint32_t sum = 0;
    if (flags & RECORD_SPARSE) {
        uint8_t mask[ZT_MAX_ACTIONS];
        zt_game_legal_mask(g, state, mask);
        for (int i = 0; i < count; i++) {
            int a = l->action_bytes == 1 ? *q++ : get_u16(q);
            if (l->action_bytes == 2) q += 2;
            if (a >= l->num_actions || !mask[a] || (i > 0 && a <= view->actions[i - 1]))
                return zt_fail(ZT_ERR_CORRUPT, "replay record with a bad policy action %d", a);
            view->actions[i] = (uint16_t)a;
        }
        for (int i = 0; i < count - 1; i++) {
            view->weights[i] = get_u16(q);
            q += 2;
            sum += view->weights[i];
        }
        view->num_pairs = count;
    } else {
        if (count != num_legal - 1)
            return zt_fail(ZT_ERR_CORRUPT,
                           "replay record with %d policy weights for %d legal actions", count,
                           num_legal);
        for (int i = 0; i < num_legal; i++) view->actions[i] = legal[i];
        for (int i = 0; i < count; i++) {
            view->weights[i] = get_u16(q);
            q += 2;
            sum += view->weights[i];
        }
        view->num_pairs = num_legal;
    }
    if (sum > ZT_REPLAY_WEIGHT_SUM)
        return zt_fail(ZT_ERR_CORRUPT, "replay record with policy weights summing past %u",
                       ZT_REPLAY_WEIGHT_SUM);
    view->weights[view->num_pairs - 1] = (uint16_t)(ZT_REPLAY_WEIGHT_SUM - sum);
    *qp = q;
    return ZT_OK;
}

/* ---- reanalyse: rewriting a record in place ---- */

double zt_record_refit(const zt_record_layout *l, const zt_game *g, uint8_t *p, size_t len,
                       const float *policy, float root_value)
{
    ZT_ASSERT(zt_record_length(l, p, len) == len && isfinite(root_value));
    uint8_t flags = p[0];
    size_t head = (p[1] & 0x80) ? 3 : 2;
    int count = (p[1] & 0x7f) | ((p[1] & 0x80) ? p[2] << 7 : 0);
    uint8_t *q = p + head + l->compact_size;
    put_u16(q, zt_record_half_from_float(root_value));
    q += 2;
    p[0] = (uint8_t)(flags | RECORD_REANALYSED);
    if (!(flags & ZT_REPLAY_FULL_SEARCH)) return 0;
    /* the old policy, for the distance */
    double old_p[ZT_MAX_ACTIONS] = {0}, new_p[ZT_MAX_ACTIONS] = {0};
    zt_record_view view;
    uint8_t decoded[ZT_MAX_STATE_BYTES];
    zt_status st = zt_record_decode(l, g, p, len, decoded, &view);
    ZT_ASSERT(st == ZT_OK);
    (void)st;
    for (int i = 0; i < view.num_pairs; i++)
        old_p[view.actions[i]] = (double)view.weights[i] / ZT_REPLAY_WEIGHT_SUM;
    uint16_t legal[ZT_MAX_ACTIONS], chosen[ZT_MAX_ACTIONS], qw[ZT_MAX_ACTIONS];
    int num_legal = g->legal(g, decoded, legal), n;
    double w[ZT_MAX_ACTIONS];
    if (flags & RECORD_SPARSE) {
        /* the `count` most weighted legal actions, then in increasing order */
        bool taken[ZT_MAX_ACTIONS] = {false};
        for (n = 0; n < count; n++) {
            int best = -1;
            for (int i = 0; i < num_legal; i++)
                if (!taken[i] && (best < 0 || policy[legal[i]] > policy[legal[best]])) best = i;
            ZT_ASSERT(best >= 0);
            taken[best] = true;
        }
        n = 0;
        for (int i = 0; i < num_legal; i++)
            if (taken[i]) chosen[n++] = legal[i];
    } else {
        n = num_legal;
        memcpy(chosen, legal, sizeof(uint16_t) * (size_t)n);
    }
    double sum = 0;
    for (int i = 0; i < n; i++) sum += w[i] = policy[chosen[i]];
    ZT_ASSERT(sum > 0);
    zt_record_quantise(w, n, qw);
    if (flags & RECORD_SPARSE) {
        for (int i = 0; i < n; i++) {
            if (l->action_bytes == 1)
                *q++ = (uint8_t)chosen[i];
            else {
                put_u16(q, chosen[i]);
                q += 2;
            }
        }
    }
    for (int i = 0; i < n - 1; i++) {
        put_u16(q, qw[i]);
        q += 2;
    }
    double l1 = 0;
    for (int i = 0; i < n; i++) new_p[chosen[i]] = (double)qw[i] / ZT_REPLAY_WEIGHT_SUM;
    for (int a = 0; a < l->num_actions; a++) l1 += fabs(new_p[a] - old_p[a]);
    return l1;
}
