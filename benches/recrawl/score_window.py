#!/usr/bin/env python3
"""Nightly keeper runs through an index with a window, scored against the exact ground truth.

usage: score_window.py CORPUS_DIR WINDOW OUT_DIR [OUT_DIR ...]   (one OUT_DIR per night, oldest first)

The ideal incremental keeper rule with renewal, on the ground-truth graph (gt_pairs.parquet, exact
J >= 0.8): night n's documents in manifest order; each is dropped iff a partner of it is indexed and
alive (kept on a night, or renewed, within the last WINDOW nights), which renews the earliest such
partner, or a partner was kept before it tonight; else it is kept and indexed. Prints per night the
run's drops beside the ideal's, and the drops whose duplicate_of is no partner (none expected).
Beside it, the same rule without renewal (an indexed document forgotten WINDOW nights after the night
that kept it), for contrast. Last line: 'window=W drops=D ideal=I deviation=X' summed over nights.
"""
import collections
import sys

import pyarrow.parquet as pq

corpus, window, outs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
if not outs:
    sys.exit(__doc__)
g = pq.read_table(f"{corpus}/gt_pairs.parquet", columns=["id_a", "id_b"]).to_pydict()
adj = collections.defaultdict(set)
for a, b in zip(g["id_a"], g["id_b"]):
    adj[a].add(b)
    adj[b].add(a)



def night(ids, n, indexed, renew):
    """The ideal drops of night n; updates `indexed`: id -> (order, last night seen)."""
    tonight, drops = {}, 0
    for row, i in enumerate(ids):
        alive = [p for p in adj[i] if p in indexed and indexed[p][1] + window >= n]
        if alive:
            p = min(alive, key=lambda p: indexed[p][0])
            if renew:
                indexed[p] = (indexed[p][0], n)
            drops += 1
        elif any(p in tonight for p in adj[i]):
            drops += 1
        else:
            tonight[i] = row
    for i, row in tonight.items():
        indexed[i] = ((n, row), n)
    return drops


renewing, forgetting = {}, {}
tot_d = tot_i = 0
for n, o in enumerate(outs):
    m = pq.read_table(f"{o}/manifest.parquet", columns=["id", "keep", "duplicate_of"]).to_pydict()
    ideal = night(m["id"], n, renewing, True)
    without = night(m["id"], n, forgetting, False)
    drops = sum(1 for k in m["keep"] if not k)
    stray = sum(1 for i, k, d in zip(m["id"], m["keep"], m["duplicate_of"]) if not k and d not in adj[i])
    print(f"night {n + 1}: drops {drops}, ideal {ideal} (without renewal {without}), drops not against a ground-truth partner {stray}")
    tot_d += drops
    tot_i += ideal
print(f"window={window} drops={tot_d} ideal={tot_i} deviation={abs(tot_d - tot_i) / max(tot_i, 1):.4f}")
