"""Builds data-samples/rust-docs.* from the Rust documentation that rustup installs (the `rust-docs`
component: MIT OR Apache-2.0, see README.md): pages of the Rust book, the error-code index and the
standard library's primitive, integer, atomic and NonZero pages, taken from two toolchains (a
stable one and a nightly a few weeks apart), the way two crawls of one site see it.

    python3 data-samples/rust-docs.py STABLE_HTML_DIR NIGHTLY_HTML_DIR

Writes rust-docs.parquet and rust-docs.jsonl.gz (the same rows) next to this file; needs polars.
Deterministic for the same two directories.
"""
import glob
import gzip
import html.parser
import json
import os
import sys

import polars as pl

PAGES = [
    "book/ch*.html",
    "error_codes/E0[0-3]*.html",
    "std/primitive.*.html",
    "core/num/struct.NonZero*.html",
    "std/sync/atomic/struct.Atomic*.html",
    "std/num/struct.*.html",
]
LARGEST = 120_000  # bytes of text: the largest integer pages run to megabytes


class Text(html.parser.HTMLParser):
    """A page's visible text: scripts and styles dropped, block elements as line breaks."""

    BLOCK = {"p", "div", "li", "h1", "h2", "h3", "h4", "pre", "tr", "section", "summary", "br", "dt", "dd"}

    def __init__(self):
        super().__init__()
        self.out, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.skip += 1
        elif tag in self.BLOCK:
            self.out.append("\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self.skip -= 1
        elif tag in self.BLOCK:
            self.out.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.out.append(data)

    def text(self):
        lines = [" ".join(l.split()) for l in "".join(self.out).splitlines()]
        out, blank = [], False
        for l in lines:
            if l:
                out.append(l)
                blank = False
            elif not blank and out:
                out.append("")
                blank = True
        return "\n".join(out).strip()


def pages(root, crawl):
    rows = []
    for pattern in PAGES:
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            p = Text()
            p.feed(open(path, encoding="utf-8", errors="replace").read())
            t = p.text()
            if 200 <= len(t.encode()) <= LARGEST:
                rel = os.path.relpath(path, root)
                rows.append({"id": f"{crawl}/{rel}", "text": t, "url": f"https://doc.rust-lang.org/{crawl}/{rel}", "crawl": crawl})
    return rows


def main():
    stable, nightly = sys.argv[1:3]
    rows = pages(stable, "stable") + pages(nightly, "nightly")
    here = os.path.dirname(os.path.abspath(__file__))
    pl.DataFrame(rows).write_parquet(os.path.join(here, "rust-docs.parquet"), compression="zstd", row_group_size=1024)
    with gzip.GzipFile(os.path.join(here, "rust-docs.jsonl.gz"), "wb", mtime=0) as f:
        for r in rows:
            f.write((json.dumps(r, ensure_ascii=False) + "\n").encode())
    mb = sum(len(r["text"].encode()) for r in rows) / 1e6
    print(f"{len(rows)} pages, {mb:.1f} MB of text")


main()
