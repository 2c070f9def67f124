"""Checks a `--substrings` run against an independent suffix array (pydivsufsort).

usage: check.py OUT_DIR 'SHARD_GLOB' [MIN_BYTES] [PARAGRAPHS_OUT_DIR]

Reads the input shards and OUT_DIR/manifest.parquet (a run with the default --keep first, so keep
order is input order), cuts each kept text's drop_spans as `apply` does (the retained text),
and builds one suffix array over every kept document's retained text followed by every kept
document's original text. Suffixes sharing their first L bytes form runs of the suffix array
(LCP >= L), so for each L-byte window of an original text it finds the earliest kept document
whose retained text holds the window (and, in the same document, the earliest place), and the
same over the original texts. It prints:

- violations: removed bytes that lie in no L-byte window of their text whose bytes the retained
  text of an earlier kept document, or of the same document at an earlier offset, holds (must
  be 0);
- coverage: of the bytes that lie in an L-byte window the retained text of an *earlier* document
  holds, the share removed (target >= 0.97); and the same of windows it holds with no cut inside
  (a window that exists only where apply joined two retained pieces is none of the input's);
- of the bytes "every copy after the first, on original text" would remove (an L-byte window
  held earlier by the original kept texts), the share removed.
With PARAGRAPHS_OUT_DIR (a --paragraphs run alone over the same input), the bytes that run
removes are left out of the violations: the paragraph rule's guarantee is its own (the paragraph's
text, whitespace runs as one space, retained earlier), and a 100-byte paragraph holds no 200-byte
window. Nothing here imports corpus-dedup's code.
"""
import glob
import json
import sys

import numpy as np
import pyarrow.parquet as pq
from pydivsufsort import divsufsort, kasai


def main():
    out, pattern = sys.argv[1], sys.argv[2]
    L = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    paragraphs_out = sys.argv[4] if len(sys.argv) > 4 else None
    texts = []
    for f in sorted(glob.glob(pattern)):
        texts.extend(pq.read_table(f, columns=["text"]).column("text").to_pylist())
    m = pq.read_table(f"{out}/manifest.parquet", columns=["keep", "drop_spans"]).to_pylist()
    assert len(m) == len(texts), (len(m), len(texts))
    orig, kept, spans = [], [], []
    for t, row in zip(texts, m):
        if not row["keep"] or t is None:
            continue
        b = t.encode("utf-8")
        s = [(x["start"], x["end"]) for x in (row["drop_spans"] or [])]
        r, at = bytearray(), 0
        for a, e in s:
            assert at <= a < e <= len(b), (at, a, e, len(b))
            r += b[at:a]
            at = e
        r += b[at:]
        orig.append(b)
        kept.append(bytes(r))
        spans.append(s)
    n = len(orig)
    # One byte string: retained texts, then originals. Per byte: its document's keep rank,
    # whether it is in a retained text, its offset in the original text, and how many bytes
    # of its document follow it (a window must fit in its document).
    parts, rank, is_r, off, left, piece = [], [], [], [], [], []
    for which, docs in ((1, kept), (0, orig)):
        for k, b in enumerate(docs):
            parts.append(b)
            ln = len(b)
            rank.append(np.full(ln, k, dtype=np.int32))
            is_r.append(np.full(ln, which, dtype=np.int8))
            left.append(np.arange(ln, 0, -1, dtype=np.int32))
            if which:
                # The original offset of each retained byte, and the bytes of its piece (the
                # text between two cuts) from it on.
                keepmask = np.ones(len(orig[k]), dtype=bool)
                for a, e in spans[k]:
                    keepmask[a:e] = False
                o = np.nonzero(keepmask)[0].astype(np.int32)
                off.append(o)
                p = np.zeros(ln, dtype=np.int32)
                if ln:
                    brk = np.ones(ln, dtype=bool)
                    brk[:-1] = o[1:] != o[:-1] + 1
                    ends = np.nonzero(brk)[0]
                    idx = np.searchsorted(ends, np.arange(ln))
                    p = (ends[idx] - np.arange(ln) + 1).astype(np.int32)
                piece.append(p)
            else:
                off.append(np.arange(ln, dtype=np.int32))
                piece.append(np.arange(ln, 0, -1, dtype=np.int32))
    data = np.frombuffer(bytearray(b"".join(parts)), dtype=np.uint8)
    rank, is_r, off, left, piece = (np.concatenate(x) for x in (rank, is_r, off, left, piece))
    sa = divsufsort(data)
    lcp = kasai(data, sa)  # lcp[i]: common prefix of sa[i] and sa[i + 1]
    valid = left[sa] >= L
    # Runs of the suffix array whose suffixes share their first L bytes.
    brk = np.ones(len(sa), dtype=bool)
    brk[1:] = lcp[:-1] < L
    group = np.cumsum(brk) - 1
    g_count = group[-1] + 1
    big = np.iinfo(np.int64).max

    def earliest(kind, whole=False):
        # Per group: the smallest (rank, offset) among valid suffixes of `kind`, as one key
        # (`whole`: only windows of retained text that no cut runs through).
        sel = valid & (is_r[sa] == kind)
        if whole:
            sel &= piece[sa] >= L
        key = np.full(len(sa), big, dtype=np.int64)
        key[sel] = rank[sa][sel].astype(np.int64) << 32 | off[sa][sel].astype(np.int64)
        best = np.full(g_count, big, dtype=np.int64)
        np.minimum.at(best, group, key)
        return best

    best_r, best_o, best_w = earliest(1), earliest(0), earliest(1, True)
    # For each original position (in original order), its group's earliest holders.
    o_sel = (is_r[sa] == 0) & valid
    pos = sa[o_sel]
    order = np.argsort(pos)
    pos = pos[order]
    g = group[o_sel][order]
    k = rank[pos].astype(np.int64)
    j = off[pos].astype(np.int64)
    hr, ho, hw = best_r[g], best_o[g], best_w[g]
    rk, ro = hr >> 32, hr & 0xFFFFFFFF
    # A window held by an earlier document's retained text; or by its own retained text at an
    # earlier offset; or by an earlier original (or its own, earlier).
    earlier_doc = rk < k
    earlier_whole = (hw >> 32) < k
    earlier_any = earlier_doc | ((rk == k) & (ro < j))
    ok, okr = (ho >> 32), (ho & 0xFFFFFFFF)
    orig_earlier = (ok < k) | ((ok == k) & (okr < j))
    # Per original byte, whether some window holding it is of each kind: a window starting at j
    # covers [j, j + L): spread with a difference array per document.
    base = np.zeros(n + 1, dtype=np.int64)
    base[1:] = np.cumsum([len(b) for b in orig])
    total = int(base[-1])
    start = base[k] + j

    def covered(flags):
        d = np.zeros(total + 1, dtype=np.int32)
        s = start[flags]
        np.add.at(d, s, 1)
        np.add.at(d, s + L, -1)
        return np.cumsum(d[:-1]) > 0

    cov_doc, cov_any, cov_orig = covered(earlier_doc), covered(earlier_any), covered(orig_earlier)
    cov_whole = covered(earlier_whole)
    removed = np.zeros(total, dtype=bool)
    for i, s in enumerate(spans):
        for a, e in s:
            removed[base[i] + a:base[i] + e] = True
    exempt = np.zeros(total, dtype=bool)
    if paragraphs_out:
        p = pq.read_table(f"{paragraphs_out}/manifest.parquet", columns=["keep", "drop_spans"]).to_pylist()
        kept_rows = [r for r, t in zip(p, texts) if r["keep"] and t is not None]
        assert len(kept_rows) == n
        for i, row in enumerate(kept_rows):
            for x in row["drop_spans"] or []:
                exempt[base[i] + x["start"]:base[i] + x["end"]] = True
    res = {
        "min_bytes": L,
        "kept_documents": n,
        "kept_bytes": total,
        "removed_bytes": int(removed.sum()),
        "violations": int((removed & ~cov_any & ~exempt).sum()),
        "removed_by_paragraph_rule_bytes": int((removed & exempt).sum()),
        "held_by_earlier_document_bytes": int(cov_doc.sum()),
        "coverage": float((removed & cov_doc).sum() / max(1, cov_doc.sum())),
        "held_uncut_bytes": int(cov_whole.sum()),
        "coverage_of_uncut": float((removed & cov_whole).sum() / max(1, cov_whole.sum())),
        "after_first_original_bytes": int(cov_orig.sum()),
        "share_of_after_first_original_removed": float((removed & cov_orig).sum() / max(1, cov_orig.sum())),
    }
    print(json.dumps(res))


if __name__ == "__main__":
    main()
