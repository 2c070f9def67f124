"""The audit page in a real browser: headless Chromium driven over the DevTools protocol (its
pipe, no extra package), pairs labelled with key presses, the labels exported and scored, the
same from Python (make test runs this after python/build.sh installed the wheel)."""
import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import corpus_dedup as cd

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = str(ROOT / "data-samples" / "synthetic" / "*.parquet")
CHROMIUM = os.environ.get("CORPUS_DEDUP_CHROMIUM") or shutil.which("chromium")
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "corpus-dedup-target"))
BINARY = str(TARGET / "release" / "corpus-dedup")


class Browser:
    """Chromium with `--remote-debugging-pipe`: commands on its fd 3, answers on its fd 4, each
    a JSON message ended by a NUL byte."""

    def __init__(self, profile):
        to_child, self._send = os.pipe()
        self._recv, from_child = os.pipe()
        # Copies above 4, so moving them to 3 and 4 in the child never overwrites the other.
        hi_in, hi_out = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child, from_child))

        def fds():
            os.dup2(hi_in, 3)
            os.dup2(hi_out, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-pipe", "--host-resolver-rules=MAP * ~NOTFOUND",
             f"--user-data-dir={profile}", "about:blank"],
            # The copies are not inherited (Python's are close-on-exec); 3 and 4, made by dup2
            # after the fork, are.
            close_fds=False, preexec_fn=fds,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for fd in (to_child, from_child, hi_in, hi_out):
            os.close(fd)
        self._next, self._buf, self.session = 0, b"", None
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget",
                                 targetId=page["targetId"], flatten=True)["sessionId"]

    def call(self, method, **params):
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self._send, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self._buf:
                chunk = os.read(self._recv, 1 << 16)
                assert chunk, "chromium closed its pipe"
                self._buf += chunk
            line, self._buf = self._buf.split(b"\0", 1)
            reply = json.loads(line)
            if reply.get("id") == self._next:
                assert "error" not in reply, reply
                return reply["result"]

    def eval(self, expr):
        return self.call("Runtime.evaluate", expression=expr, returnByValue=True)["result"].get("value")

    def open(self, url):
        self.call("Page.navigate", url=url)
        for _ in range(200):
            if self.eval("document.readyState") == "complete" and self.eval("typeof exported") == "function":
                return
            self.call("Runtime.evaluate", expression="new Promise(r => setTimeout(r, 25))",
                      awaitPromise=True)
        raise AssertionError(f"{url} did not load")

    def key(self, key, code=None, vk=0):
        text = key if len(key) == 1 else ""
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key=key, code=code or f"Key{key.upper()}",
                      text=text if kind == "keyDown" else "", windowsVirtualKeyCode=vk)

    def close(self):
        self.proc.kill()
        self.proc.wait()
        os.close(self._send)
        os.close(self._recv)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium (apt-get install chromium)")
def test_pairs_are_labelled_with_keys_exported_and_scored(tmp_path):
    out = tmp_path / "out"
    cd.run(SAMPLES, str(out), progress=False)
    pairs = cd.audit(str(out), pairs=12)
    assert pairs.height > 3
    assert {"pair", "band", "similarity", "dropped_id", "kept_id", "dropped_text", "kept_text"} <= set(pairs.columns)
    ids = pairs["pair"].to_list()
    browser = Browser(tmp_path / "profile")
    try:
        url = (out / "audit.html").as_uri()
        browser.open(url)
        assert browser.eval("document.getElementById('progress').textContent") == f"0 of {len(ids)} labelled"
        # y on the first, n on the second, back with the left arrow and s over the second's n,
        # then y on the third.
        browser.key("y", vk=89)
        browser.key("n", vk=78)
        browser.key("ArrowLeft", code="ArrowLeft", vk=37)
        browser.key("s", vk=83)
        browser.key("y", vk=89)
        exported = json.loads(browser.eval("exported()"))
        assert exported == {ids[0]: "y", ids[1]: "s", ids[2]: "y"}
        assert browser.eval("document.getElementById('progress').textContent") == f"3 of {len(ids)} labelled"
        # The labels stay in the browser: a reload shows them.
        browser.open(url)
        assert json.loads(browser.eval("exported()")) == exported
        browser.key("ArrowRight", code="ArrowRight", vk=39)
        browser.key("n", vk=78)
        exported = json.loads(browser.eval("exported()"))
    finally:
        browser.close()
    assert exported[ids[1]] == "n"
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps(exported))
    scored = json.loads(subprocess.run(
        [BINARY, "audit", str(out), "--score", str(labels)],
        capture_output=True, text=True, check=True).stdout)
    assert scored["overall"]["labelled"] == 3
    assert scored == cd.score(str(out), exported) == cd.score(str(out), str(labels))
    yes = sum(b["yes"] for b in scored["bands"])
    no = sum(b["no"] for b in scored["bands"])
    assert (yes, no) == (2, 1)
