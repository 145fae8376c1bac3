/* Run directories and model paths (layout: docs of issue 5, "Run directory
 * layout"). Wherever a model is expected a path may name a weights file, a
 * checkpoint directory (its weights.safetensors) or a run directory (the
 * checkpoint named by ckpt/latest). Also what every user of a model needs:
 * the evaluator over its net and the search settings of the run it came
 * from.
 * The caller owns what zt_run_open_model and zt_run_evaluator_new return. */
#ifndef ZT_TRAIN_RUN_H
#define ZT_TRAIN_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/az_model.h"
#include "core/config.h"
#include "core/status.h"
#include "game/game.h"
#include "nn/nn.h"
#include "search/search.h"

/* Whether `dir` may be a run directory: refuses an empty name (an unset
 * shell variable), the filesystem root and an existing non-directory, each
 * with a one-line ZT_ERR_INVALID naming it. A missing directory is fine
 * (a new run creates it). Nothing is created. */
zt_status zt_run_dir_check(const char *dir);

/* The weights file `path` stands for, written to out (cap bytes): the
 * file, a checkpoint directory's weights.safetensors, or a run directory's
 * checkpoint that ckpt/latest names (when latest is missing or damaged or
 * names a directory without weights, the newest complete checkpoint, with
 * a warning). Errors: "cannot open model 'P': ...", "no checkpoint in
 * 'RUN'", a ckpt/latest that names no complete checkpoint while none
 * remains. The file itself is not opened. */
zt_status zt_run_resolve_weights(const char *path, char *out, size_t cap);

/* Opens the weights at `path` (any of the three forms): reads the
 * architecture and game spec from the file's metadata (zt_net_file_info),
 * creates the game with zt_game_from_spec and the net, and loads the
 * weights; an int8 net is calibrated on 256 positions of random play. A
 * file that is no Zeroth weights file is refused with "'P' is not a weights
 * file (...)". The caller frees *net and then *game. */
zt_status zt_run_open_model(const char *path, const char *backend, zt_precision prec, int threads,
                            zt_game **game, zt_net **net);

/* Checks that the game a model was trained for is the one the user named:
 * `name` with the game settings in cfg, where settings the user left out
 * take the model's values (so `eval sim --model M` follows M's vertices and
 * k). Reads the game's keys from cfg. Error: "model 'P' plays 'sim
 * vertices=14 k=4 variant=avoid', not 'sim vertices=6 k=3 variant=avoid'". */
zt_status zt_run_check_game(const char *path, const zt_game *model_game, const char *name,
                            zt_config *cfg);

/* An evaluator over a net (nn/nn.h) for the AlphaZero model: a forward pass,
 * with WDL heads turned into the scalar value P(win) - P(loss). The net is
 * borrowed; free the evaluator with zt_run_evaluator_free. */
zt_status zt_run_evaluator_new(zt_net *net, zt_evaluator *out);
void zt_run_evaluator_free(zt_evaluator *ev);

/* The search a model's run trained with, as defaults for an agent playing
 * with the model: when `path` is a run directory or a checkpoint directory
 * of one (RUN/ckpt/NAME), the search.* keys of RUN/config.ini (the resolved
 * config training wrote) that cfg does not set are put into cfg, except
 * self-play's exploration noise (search.gumbel_noise,
 * search.dirichlet_alpha, search.dirichlet_fraction). Then
 * zt_search_config_read (search/settings.h) of cfg gives the run's search
 * under the user's overrides. A weights file, or a directory without a
 * run's config.ini, adds nothing. `from` gets the config file read ("" for
 * none). *greedy (when not NULL) says whether the run's arena played the
 * model without search (arena.sims = 0: backgammon's default, whose policy
 * head learns nothing) and cfg leaves search.sims unset: an agent that plays
 * the model as its run measured it then plays greedily (agent/greedy.h).
 * Errors: a config.ini that cannot be read or parsed. */
zt_status zt_run_search_defaults(const char *path, zt_config *cfg, char *from, size_t cap,
                                 bool *greedy);

/* The default `threads` of a net that plays (eval, play, serve): one.
 * Their net calls are batches of a few leaves, a few oneDNN primitives
 * each ending at an OpenMP barrier, and a team of threads needs every one of
 * them on a core at once: with the machine's cores busy with other work, a
 * thread waiting (spinning, or asleep under OMP_WAIT_POLICY=passive) for one
 * the scheduler has not run yet made `eval` 5 to 10 times slower than with
 * one thread (docs/networks.md, "Threads"). --set threads=N still asks for
 * N. */
enum { ZT_RUN_PLAY_THREADS = 1 };

/* What eval, play and serve do to play with the model at `path`: the
 * network settings of cfg (threads: ZT_RUN_PLAY_THREADS by default), the model opened (zt_run_open_model), checked to
 * play `game_name` (zt_run_check_game), the run's search settings taken as
 * defaults under cfg's (zt_run_search_defaults: `from` names the file read)
 * and the search read for play, gumbel_noise its default of
 * search.gumbel_noise; *greedy as zt_run_search_defaults gives it (NULL: not
 * asked). Capacities stay 0 (zt_search_config_size), the seed is the
 * caller's. The caller frees *net and then *game; nothing is left to
 * free on an error. */
zt_status zt_run_open_player(const char *path, const char *game_name, zt_config *cfg,
                             bool gumbel_noise, zt_game **game, zt_net **net,
                             zt_search_config *sc, char *from, size_t cap, bool *greedy);

/* Network settings from cfg: backend [auto], device [auto: the CPU here;
 * cuda or cuda:N: backend "cuda", or "no CUDA GPU found: ..."], precision
 * [auto], threads [default_threads]. *backend lives as long as cfg. */
zt_status zt_run_nn_settings(zt_config *cfg, int default_threads, const char **backend,
                             zt_precision *prec, int *threads);

/* Finds configs/<game>.ini in the working directory, else beside the
 * executable (build/zeroth in a checkout: ../configs), else in the checkout
 * the program was built from. Writes the path found to out; false when none
 * has it. */
bool zt_run_default_config(const char *game, char *out, size_t cap);

#endif
