"""A benchmark reference for the speed measure of `--reference` (issue 46): ITEMS items of about
300 bytes, each a question body in benchmark boilerplate. Most bodies are synthetic text
(`gen-corpus`, English and Chinese: found in no real document); SOURCE_ITEMS of them are
paragraphs of the development sources, which dev-large's documents are cut from, so the run also
pays for documents that do hold an item.
usage: make_reference.py GEN_CORPUS OUT.parquet [ITEMS=100000] [SOURCE_ITEMS=1000]
"""
import gzip
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

BOILERPLATE = ["Question:", "Answer with the letter of the best option.", "Example 1:",
               "Input: nums = [2,7,11,15], target = 9", "Output: [0,1]", "Constraints:"]
SOURCES = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "dev-sources.jsonl.gz"


def cut(text, size, rng):
    """Pieces of about `size` bytes of `text`, cut at spaces (or anywhere in Chinese)."""
    out, at = [], 0
    while at < len(text):
        end = min(len(text), at + rng.randint(size // 2, size * 3 // 2) // 2)
        space = text.find(" ", end)
        end = space if 0 < space < end + 40 else end
        piece = text[at:end].strip()
        if len(piece.encode()) > 60:
            out.append(piece)
        at = end + 1
    return out


def main():
    gen, out = sys.argv[1], sys.argv[2]
    items = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    real = int(sys.argv[4]) if len(sys.argv) > 4 else 1_000
    rng = random.Random(46)
    bodies = []
    with tempfile.TemporaryDirectory() as tmp:
        for lang, seed in (("en", 1), ("zh", 2)):
            subprocess.run([gen, "--out", tmp, "--docs", "12000", "--lang", lang, "--seed",
                            str(seed), "--name", lang], check=True, stdout=subprocess.DEVNULL)
        texts = pl.read_parquet(f"{tmp}/*.parquet")["text"].to_list()
    for t in texts:
        bodies.extend(cut(t, 300, rng))
    rng.shuffle(bodies)
    bodies = bodies[: items - real]
    paragraphs = []
    with gzip.open(SOURCES, "rt") as f:
        for line in f:
            for p in json.loads(line)["text"].split("\n\n"):
                if 150 <= len(p.encode()) <= 600:
                    paragraphs.append(p)
    bodies += rng.sample(paragraphs, real)
    rng.shuffle(bodies)
    texts = ["\n".join(rng.sample(BOILERPLATE, 3) + [b]) for b in bodies]
    df = pl.DataFrame({"id": [f"q{i}" for i in range(len(texts))], "text": texts})
    df.write_parquet(out)
    print(f"{df.height} items, {sum(len(t.encode()) for t in texts) / 1e6:.1f} MB of text -> {out}")


main()
