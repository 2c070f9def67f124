"""`--substrings` on real templated pages (data-samples/rust-docs.parquet: the Rust book and
standard library documentation as visible text), checked by an independent suffix array
(benches/substrings/check.py): no byte is removed without an earlier retained copy, the share of
removable bytes found does not fall below what this build reaches, and no cut falls inside a
word."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = str(ROOT / "data-samples" / "rust-docs.parquet")
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "corpus-dedup-target"))
BINARY = str(TARGET / "release" / "corpus-dedup")
# What this build finds of the bytes an earlier kept page retains (0.952; docs/PERFORMANCE.md).
RECALL = 0.95


def inside_word(text, at):
    """Whether byte offset `at` of `text` (UTF-8) falls between two letters or digits of a
    spaced script, or before a combining mark."""
    import unicodedata

    b = text.encode()
    if at <= 0 or at >= len(b):
        return False
    before = b[:at].decode("utf-8")[-1:]
    after = b[at:].decode("utf-8")[:1]
    if unicodedata.category(after).startswith("M"):
        return True

    def spaced_word(c):
        o = ord(c)
        spaceless = 0x0E00 <= o <= 0x109F or 0x1780 <= o <= 0x17FF or 0x2E80 <= o <= 0xD7AF
        return (c.isalnum() or unicodedata.category(c).startswith("M")) and not spaceless

    return spaced_word(before) and spaced_word(after)


def test_substrings_on_real_pages_lose_nothing_find_the_repeats_and_cut_between_words(tmp_path):
    out = tmp_path / "out"
    run = subprocess.run(
        [BINARY, "run", "--quiet", "--input", SAMPLE, "--output", str(out), "--substrings"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    check = subprocess.run(
        [sys.executable, str(ROOT / "benches" / "substrings" / "check.py"), str(out), SAMPLE, "200"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    res = json.loads(check.stdout)
    assert res["violations"] == 0, res
    assert res["removed_bytes"] > 400_000, res
    assert res["coverage"] >= RECALL, res
    texts = pq.read_table(SAMPLE, columns=["text"]).column("text").to_pylist()
    rows = pq.read_table(out / "manifest.parquet", columns=["drop_spans"]).column("drop_spans")
    edges = [
        (t, x)
        for t, spans in zip(texts, rows.to_pylist())
        for s in spans or []
        for x in (s["start"], s["end"])
    ]
    assert len(edges) > 1000
    inside = [(t.encode()[x - 20 : x + 20], x) for t, x in edges if inside_word(t, x)]
    assert inside == []
