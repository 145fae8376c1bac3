/* Zeroth's public C API: one header for programs that link the library.
 * It gathers the module headers a user needs (games, networks, search,
 * training); their comments document ownership (what *_new returns is freed
 * with the matching *_free). Build with -I include -I src. */
#ifndef ZEROTH_ZEROTH_H
#define ZEROTH_ZEROTH_H

#define ZEROTH_VERSION_MAJOR 0
#define ZEROTH_VERSION_MINOR 1
#define ZEROTH_VERSION_PATCH 0
#define ZEROTH_VERSION "0.1.0"

#include "core/config.h"
#include "core/rng.h"
#include "core/status.h"
#include "game/game.h"
#include "game/solver.h"
#include "agent/player.h"
#include "nn/nn.h"
#include "search/search.h"
#include "train/train.h"

#endif
