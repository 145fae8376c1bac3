/* GNU Backgammon (Debian package `gnubg`) as a backgammon player: gnubg runs
 * as a subprocess in text mode (`gnubg -t -q -r`), is told each position and
 * roll ("set board <position id>", "set dice"), and its best play ("hint")
 * is matched against the plays of game/backgammon.h by gnubg's own notation,
 * then given back one checker move at a time. The doubling cube is off, as in
 * the game here. The caller frees the player with zt_player_free, which ends
 * the subprocess. */
#ifndef ZT_AGENT_GNUBG_H
#define ZT_AGENT_GNUBG_H

#include "agent/player.h"
#include "core/status.h"
#include "game/game.h"

/* spec: "gnubg" (0-ply, gnubg's quick evaluation) or "gnubg:P" (P-ply
 * lookahead, 0..3). The executable is $ZT_GNUBG if set, else `gnubg` on the
 * PATH, else /usr/games/gnubg (where Debian installs it). Fails with a
 * one-line message if the game is not backgammon or gnubg does not start. */
zt_status zt_player_new_gnubg(const zt_game *g, const char *spec, zt_player **out);

/* Whether spec names GNU Backgammon: "gnubg" or "gnubg:P". */
bool zt_gnubg_names(const char *spec);

/* After a gnubg player answered -1 (gnubg died, timed out, or gave a play
 * that is not legal here): what went wrong. "" while all is well, and for
 * any other player (NULL included). */
const char *zt_gnubg_error(const zt_player *p);

#endif
