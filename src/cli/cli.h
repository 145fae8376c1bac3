/* Shared pieces of the `zeroth` subcommands: one file per subcommand
 * (cmd_<name>.c), each exporting `int zt_cmd_<name>(int argc, char **argv)`
 * where argv[0] is the subcommand's name. */
#ifndef ZT_CLI_CLI_H
#define ZT_CLI_CLI_H

#include <stdbool.h>

#include "arena/arena.h"
#include "core/config.h"
#include "core/progress.h"
#include "core/status.h"
#include "game/game.h"

/* Prints "zeroth: <message>" on one line (the thread's last zt_fail message
 * when msg is NULL) and returns the exit code 1. */
int zt_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int zt_cli_fail(zt_status st);

/* True when argv[*i] is `flag`; then *value is the next argument (error if
 * missing). Also accepts "--flag=value". A value starting with "--" is
 * refused (a flag where the value was forgotten); on an error *value is "". */
bool zt_cli_flag_value(int argc, char **argv, int *i, const char *flag, const char **value,
                       zt_status *st);
bool zt_cli_is_help(const char *arg);

/* argv[i] of subcommand `cmd`, which no flag took: a word fills the first
 * empty slot of positional[0 .. n); a flag (anything starting with '-') or a
 * word past the last slot is a one-line error. Returns 0, or the exit code
 * of the error it printed. */
int zt_cli_positional(const char *cmd, const char *arg, const char **const positional[], int n);

/* Handles --set k=v and --config FILE into cfg; returns true if argv[*i] was
 * one of them (and advances *i). */
bool zt_cli_config_arg(int argc, char **argv, int *i, zt_config *cfg, zt_status *st);

/* The same flags recognised and skipped without a config (a first pass over
 * argv, before the files they apply over are known); sets *config_file when
 * the flag was --config. */
bool zt_cli_skip_config_arg(int argc, char **argv, int *i, bool *config_file, zt_status *st);

/* The settings of a command that runs training's settings (train, bench
 * selfplay), layered: `base` (a resumed run's config.ini; NULL for
 * configs/GAME.ini where it exists), then every --config FILE and --set k=v
 * (and --vertices, --k) in command-line order, each over the ones before.
 * The game is `game` (the command line's, may be NULL), else base's `game`
 * key, else a `game =` line of the --config files (or --set game=); a game
 * there that contradicts the command line or the run is a one-line error.
 * *game_out is the game (NULL when nothing names one), living as long as
 * cfg; cfg's "game" key is set to it. */
zt_status zt_cli_layered_config(int argc, char **argv, const char *base, const char *game,
                                zt_config *cfg, const char **game_out);

/* main's argv (NULL-terminated), kept for zt_cli_rerun_with_env. */
void zt_cli_save_args(char **argv);
/* Runs the program again, from the start and with the same arguments, with
 * the environment variable `name` set to `value`, for settings a runtime
 * reads before main. Returns only when it could not (name already set,
 * no saved arguments, exec failed): the caller goes on. */
void zt_cli_rerun_with_env(const char *name, const char *value);

/* Greedy play of a model in eval, play and serve (command `cmd`): greedy
 * when --greedy was given (*greedy in) or the model's run's arena played so
 * (run_greedy, from zt_run_open_player); --plies P (plies_arg, NULL when not
 * given: 0) only then, 0 or 1. Sets *greedy and *plies, and `words` to the
 * agent's description when greedy ("greedy[ 1-ply], no search[, as its
 * run's arena played; --sims S searches]"). Returns 0, or 1 after a
 * one-line error. */
int zt_cli_greedy_play(const char *cmd, bool *greedy, bool run_greedy, const char *plies_arg,
                       int *plies, char *words, size_t cap);

/* Instantiates a game by name from cfg and checks that no key is left unread
 * (unknown settings are errors). */
zt_status zt_cli_game(const char *name, zt_config *cfg, zt_game **out);

/* Progress lines of the arena on a terminal: point the config's callback at
 * meter m, which these start ("eval ..."); the caller ends it
 * (zt_progress_meter_end) once the match or the set is done, before
 * printing its results. Matches show games done and W-D-L, score and Elo
 * so far (and the SPRT's LLR); position sets show positions judged, read
 * and the mistakes or optimal moves so far. */
void zt_cli_match_progress(zt_match_config *mc, zt_progress_meter *m);
void zt_cli_positions_progress(zt_positions_config *pc, zt_progress_meter *m);

int zt_cmd_perft(int argc, char **argv);
int zt_cmd_solve(int argc, char **argv);
int zt_cmd_positions(int argc, char **argv);
int zt_cmd_moves(int argc, char **argv);
int zt_cmd_bench(int argc, char **argv);
int zt_cmd_games(int argc, char **argv);
int zt_cmd_train(int argc, char **argv);
int zt_cmd_eval(int argc, char **argv);
int zt_cmd_play(int argc, char **argv);
int zt_cmd_serve(int argc, char **argv);
int zt_cmd_report(int argc, char **argv);

/* Benchmarks, under bench/ and compiled into the binary. */
int zt_bench_games(int argc, char **argv);
int zt_bench_search(int argc, char **argv);
int zt_bench_nn(int argc, char **argv);
int zt_bench_devices(int argc, char **argv);
int zt_bench_muzero(int argc, char **argv);
int zt_bench_int8(int argc, char **argv);
int zt_bench_fit(int argc, char **argv);
int zt_bench_model(int argc, char **argv);
int zt_bench_selfplay(int argc, char **argv);

#endif
