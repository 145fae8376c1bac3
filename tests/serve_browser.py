#!/usr/bin/env python3
"""Plays games of `zeroth serve` in a real browser: headless Chromium driven
through its DevTools protocol over --remote-debugging-pipe (Python's
standard library only, no driver to install). For each server given it
loads the page, plays by clicking the board with real mouse events until the
game ends (or a number of moves), clicks Undo and New game on the way, then
checks the final position three ways: the page shows the position the
server holds, the board drawn in SVG has the pieces that position has, and
the screenshot (saved as GAME.png) has the players' colours in it.

Chromium may reach nothing but 127.0.0.1: every host name resolves to
nothing, every other address goes through a proxy on a closed loopback
port, and background networking, updates and sync are off.

Usage: serve_browser.py --out DIR [--seed N] GAME=URL[@MOVES] ...
(MOVES: stop after that many moves of the person instead of a whole game).
Exit status 0 when every check passed, 1 otherwise."""

import argparse
import base64
import fcntl
import json
import os
import random
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib

# The players' colours as the page draws them (page.html: P0, P1, and the
# yellow of Connect Four's second player, the backgammon board's wood).
RED, BLUE, YELLOW, WOOD = (0xD7, 0x26, 0x3D), (0x1B, 0x6F, 0xD1), (0xF2, 0xC3, 0x18), (0x7A, 0x52, 0x30)
COLOURS = {
    "tictactoe": [RED, BLUE],
    "connect4": [RED, YELLOW],
    "sim": [RED, BLUE],
    "backgammon": [WOOD],
}

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"FAIL: {what}", flush=True)
    return cond


class Browser:
    """Headless Chromium and one page, spoken to over the DevTools pipe:
    commands are JSON messages ended by a NUL byte on the browser's fd 3,
    replies and events come back the same way on its fd 4."""

    def __init__(self, chromium, log_path):
        self.profile = tempfile.mkdtemp(prefix="zt_chromium_")
        to_browser = os.pipe()
        from_browser = os.pipe()
        # Out of the way of 3 and 4, where the child wants them.
        fds = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in to_browser + from_browser]
        for fd in to_browser + from_browser:
            os.close(fd)
        cmd_r, cmd_w, ev_r, ev_w = fds

        def in_child():
            os.dup2(cmd_r, 3)
            os.dup2(ev_w, 4)

        args = [
            chromium, "--headless=new", "--remote-debugging-pipe", "--no-sandbox",
            "--disable-gpu", "--user-data-dir=" + self.profile, "--no-first-run",
            "--no-default-browser-check", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-extensions",
            "--disable-default-apps", "--disable-domain-reliability", "--no-pings",
            "--metrics-recording-only", "--mute-audio", "--hide-scrollbars",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            # Whatever is not loopback (which bypasses proxies) goes to a closed port.
            "--proxy-server=http://127.0.0.1:9",
            "--window-size=1280,860", "about:blank",
        ]
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(args, preexec_fn=in_child, close_fds=False,
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        os.close(cmd_r)
        os.close(ev_w)
        self.w, self.r = cmd_w, ev_r
        self.buf = b""
        self.next_id = 0
        self.session = None

    def close(self):
        try:
            self.send("Browser.close", {}, timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.w)
        os.close(self.r)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def send(self, method, params=None, timeout=30, page=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if page and self.session:
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self.next_id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError(f"{method}: no reply in {timeout} s")
            ready, _, _ = select.select([self.r], [], [], left)
            if ready:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"{method}: the browser closed the pipe")
                self.buf += chunk

    def open_page(self):
        target = self.send("Target.createTarget", {"url": "about:blank"}, page=False)
        attached = self.send("Target.attachToTarget",
                             {"targetId": target["targetId"], "flatten": True}, page=False)
        self.session = attached["sessionId"]
        self.send("Page.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": 1280, "height": 860, "deviceScaleFactor": 1, "mobile": False})

    def js(self, expr, timeout=30):
        r = self.send("Runtime.evaluate",
                      {"expression": expr, "returnByValue": True, "awaitPromise": True}, timeout)
        if "exceptionDetails" in r:
            raise RuntimeError(f"page script failed: {r['exceptionDetails']}\n{expr}")
        return r["result"].get("value")

    def click_at(self, x, y):
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            p = {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
            if kind == "mouseMoved":
                p = {"type": kind, "x": x, "y": y}
            self.send("Input.dispatchMouseEvent", p)

    def screenshot(self, path):
        data = base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])
        with open(path, "wb") as f:
            f.write(data)
        return data


# A point of element `sel` where a click lands on that element itself (lines
# are tried along their length, other shapes over a grid), or null.
CLICK_POINT = """
((sel) => {
  const e = document.querySelector(sel);
  if (!e) return null;
  const pts = [];
  if (e.tagName === "line") {
    const m = e.getScreenCTM();
    const a = [+e.getAttribute("x1"), +e.getAttribute("y1")], b = [+e.getAttribute("x2"), +e.getAttribute("y2")];
    for (const t of [0.5, 0.35, 0.65, 0.25, 0.75, 0.42, 0.58, 0.2, 0.8]) {
      const x = a[0] + (b[0] - a[0]) * t, y = a[1] + (b[1] - a[1]) * t;
      pts.push([m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
    }
  } else {
    const r = e.getBoundingClientRect();
    for (const fy of [0.5, 0.3, 0.7, 0.15, 0.85]) for (const fx of [0.5, 0.3, 0.7])
      pts.push([r.x + r.width * fx, r.y + r.height * fy]);
  }
  for (const [x, y] of pts) if (document.elementFromPoint(x, y) === e) return [x, y];
  return null;
})(%s)
"""


def click(b, sel):
    pt = b.js(CLICK_POINT % json.dumps(sel))
    if not check(pt is not None, f"no visible point to click on {sel}"):
        return False
    b.click_at(pt[0], pt[1])
    return True


def renders(b):
    return int(b.js("document.body.dataset.renders || 0"))


def wait_idle(b, after=None, timeout=30):
    """Waits until the page is idle (and has rendered since `after`)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        state = b.js("[document.body.dataset.state, +(document.body.dataset.renders || 0)]")
        if state[0] == "idle" and (after is None or state[1] > after):
            return True
        time.sleep(0.02)
    return check(False, f"the page did not come back to idle in {timeout} s")


def click_and_wait(b, sel):
    before = renders(b)
    return click(b, sel) and wait_idle(b, before)


def history(b):
    return b.js("st ? st.history.map((m) => m.by) : []")


def play_one_move(b, game, rng):
    """The person's move by clicks on the board; False when none was found."""
    if game == "backgammon":
        sources = b.js("[...document.querySelectorAll('#board [data-from]')].map((e) => e.dataset.from)")
        if not check(sources, "backgammon: no checker to pick up"):
            return False
        src = rng.choice(sources)
        if not click_and_wait(b, f"#board [data-from='{src}']"):
            return False
    moves = b.js("[...document.querySelectorAll('#board [data-move]')].map((e) => e.dataset.move)")
    if not check(moves, f"{game}: nothing on the board to click"):
        return False
    mv = rng.choice(moves)
    n = len(history(b))
    ok = click_and_wait(b, f"#board [data-move={json.dumps(mv)}]")
    return ok and check(len(history(b)) > n, f"{game}: clicking {mv} played nothing")


# The pieces drawn on the board against the pieces in the position text.
BOARD_CHECK = {
    "tictactoe": """(() => {
      const c = st.position.split(" ")[0];
      const want = [[...c].filter((x) => x === "X").length, [...c].filter((x) => x === "O").length];
      const got = [document.querySelectorAll("#board path").length, document.querySelectorAll("#board circle").length];
      return [want, got];
    })()""",
    "connect4": """(() => {
      const n = st.position.trim().length;
      const want = [Math.ceil(n / 2), Math.floor(n / 2)];
      const got = [P0, "#f2c318"].map((f) => document.querySelectorAll(`#board circle[fill="${f}"]`).length);
      return [want, got];
    })()""",
    "sim": """(() => {
      const c = st.position.split(" ")[0];
      const want = [[...c].filter((x) => x === "R").length, [...c].filter((x) => x === "B").length];
      const got = [P0, P1].map((s) => document.querySelectorAll(`#board line[stroke="${s}"]`).length);
      return [want, got];
    })()""",
    "backgammon": """(() => {
      const P = bgParse(st.position);
      const total = [0, 1].map((p) => P.board[p].reduce((a, x) => a + x, 0) + P.off[p]);
      const want = [0, 1].map((p) => P.board[p].slice(0, 24).reduce((a, x) => a + Math.min(x, 5), 0) + Math.min(P.board[p][24], 4));
      const got = ["#f5f1e6", "#2b2f36"].map((f) => document.querySelectorAll(`#board circle[fill="${f}"][r="18"]`).length);
      return [want.concat(total), got.concat([15, 15])];
    })()""",
}


def png_colours(data, colours, tol=24):
    """Counts the pixels of an 8-bit RGB or RGBA PNG near each colour."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                return None
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    counts = [0] * len(colours)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp):
            px = line[x:x + 3]
            for k, col in enumerate(colours):
                if abs(px[0] - col[0]) <= tol and abs(px[1] - col[1]) <= tol and abs(px[2] - col[2]) <= tol:
                    counts[k] += 1
        prev = line
    return counts


def server_state(url, session):
    with urllib.request.urlopen(f"{url}api/state?session={session}", timeout=10) as r:
        return json.load(r)


def play_game(b, game, url, max_moves, rng, out_dir):
    b.send("Page.navigate", {"url": url})
    # The page opens a game by itself once loaded.
    deadline = time.time() + 20
    while time.time() < deadline and not b.js("!!(document.body && document.body.dataset.state === 'idle' && typeof st !== 'undefined' && st)"):
        time.sleep(0.05)
    if not check(b.js("document.body.dataset.state") == "idle", f"{game}: the page did not load a game"):
        return
    title = b.js("document.getElementById('title').textContent")
    check(game in title or "Zeroth" in title, f"{game}: title '{title}'")
    moves = 0
    undone = False
    while b.js("document.body.dataset.over") != "1" and (max_moves is None or moves < max_moves):
        if not b.js("st.your_turn"):
            check(False, f"{game}: the game is not over and it is not the person's turn")
            return
        if not play_one_move(b, game, rng):
            return
        moves += 1
        # Undo once, by its button: the person's last move and the agent's reply go.
        if moves == 2 and not undone:
            hist = history(b)
            undone = True
            if b.js("st.over"):
                continue
            if click_and_wait(b, "#undo"):
                after = history(b)
                last_human = max(i for i, by in enumerate(hist) if by == "human")
                check(after == hist[:last_human], f"{game}: undo left {after}, wanted {hist[:last_human]}")
                moves -= 1
        if moves > 2000:
            check(False, f"{game}: no end after 2000 moves")
            return
    st = b.js("st")
    page_pos = b.js("document.body.dataset.position")
    srv = server_state(url, st["session"])
    check(srv["position"] == page_pos == st["position"],
          f"{game}: the page shows '{page_pos}', the server holds '{srv['position']}'")
    if max_moves is None:
        check(srv["over"] and srv["result"] in ("win", "loss", "draw"), f"{game}: the server's game is not over: {srv}")
        status = b.js("document.getElementById('status').textContent")
        want = {"win": "You win!", "loss": "The agent wins.", "draw": "A draw."}[srv["result"]]
        check(status == want, f"{game}: status '{status}', wanted '{want}' for {srv['result']}")
        check(srv["legal"] == [] and b.js("document.querySelectorAll('#board [data-move]').length") == 0,
              f"{game}: moves are still offered after the end")
    want, got = b.js(BOARD_CHECK[game])
    check(want == got, f"{game}: the board draws {got} pieces, the position has {want}")
    agent = b.js("[document.querySelectorAll('#topmoves tr').length, document.getElementById('agentvalue') ? document.getElementById('agentvalue').textContent : '']")
    if any(m["by"] == "agent" for m in srv["history"]):
        check(agent[0] >= 1 and agent[1], f"{game}: the agent's panel shows no value or moves: {agent}")
    shot = os.path.join(out_dir, f"{game}.png")
    data = b.screenshot(shot)
    counts = png_colours(data, COLOURS[game])
    check(counts is not None and all(c >= 50 for c in counts),
          f"{game}: screenshot {shot} lacks the players' colours ({counts} pixels)")
    result = srv["result"] or f"stopped after {moves} moves"
    print(f"{game}: {moves} moves by clicks, {len(srv['history'])} plies, {result}; "
          f"position '{srv['position']}'; screenshot {shot} ({len(data)} bytes)", flush=True)


def second_side(b, game, url):
    """New game as the second player with 5 simulations: the agent has opened
    when it comes back, with the simulations asked for."""
    b.js("document.getElementById('side').value = '1'; document.getElementById('sims').value = '5'")
    if not click_and_wait(b, "#new"):
        return
    st = b.js("st")
    check(st["human"] == 1 and st["your_turn"] and any(m["by"] == "agent" for m in st["history"]),
          f"{game}: after New game as second player: human {st['human']}, history {st['history']}")
    check(st["sims"] == 5 and "(5 simulations)" in b.js("document.getElementById('agent').textContent"),
          f"{game}: the new game does not search the 5 simulations asked for: {st['sims']}")
    check(b.js("document.querySelectorAll('#topmoves tr').length") >= 1, f"{game}: no top moves shown")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    ap.add_argument("games", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    print(f"seed {a.seed}", flush=True)
    b = Browser(a.chromium, os.path.join(a.out, "chromium.log"))
    try:
        b.open_page()
        for spec in a.games:
            game, rest = spec.split("=", 1)
            url, _, limit = rest.partition("@")
            if not url.endswith("/"):
                url += "/"
            play_game(b, game, url, int(limit) if limit else None, rng, a.out)
            if game == "tictactoe":
                second_side(b, game, url)
    except Exception as e:
        check(False, f"{type(e).__name__}: {e}")
    finally:
        b.close()
    if failures:
        print(f"{failures} failures (chromium's log: {os.path.join(a.out, 'chromium.log')})")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
