#!/usr/bin/env python3
"""Runs one peer near-dedup tool on the same Parquet shards as corpus-dedup and writes a manifest
(id, keep, cluster_id) that the corpus scorer reads.

usage: run_peer.py TOOL CORPUS_DIR OUT_DIR
TOOL: datasketch | rensa | gaoya-words | gaoya-canon | datatrove

Settings, as close to corpus-dedup's defaults as each tool allows: 128 permutations, threshold 0.8,
word 5-gram shingles. All but gaoya-words use the corpus' canonical tokens (NFKC, lowercase,
punctuation removed, every CJK character a token: ../shared/corpus/tools/canon.py), so they see the
same shingles as corpus-dedup; gaoya-words uses gaoya's own native whitespace word 5-grams (fast,
but a Chinese run without spaces is one word). LSH 16 bands x 8 rows, then each candidate pair is
checked with the tool's own estimated Jaccard >= 0.8; clusters by union-find, first document kept.
datatrove runs its own four MinHash stages (signatures, buckets, cluster; 16 buckets x 8 hashes,
64-bit hashes, one task each) through its LocalPipelineExecutor on the same shards, with the
canonical tokens as its word tokenizer (after its own text normalisation); it keeps what its
cluster stage does not list for removal and has no Jaccard check (bucket matches are duplicates).
"""
import glob, json, os, sys, time

import pyarrow as pa, pyarrow.parquet as pq

tool, corpus, out = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../shared/corpus/tools"))
import canon  # noqa: E402

K, T, B, R = 128, 0.8, 16, 8
t0 = time.time()
ids, texts = [], []
for f in sorted(glob.glob(os.path.join(corpus, "shard-*.parquet"))):
    t = pq.read_table(f, columns=["id", "text"])
    ids.extend(t.column("id").to_pylist()); texts.extend(t.column("text").to_pylist())
n = len(ids)


def shingles(text):
    toks = canon.tokens(text or "")
    if not toks:
        return []
    if len(toks) < 5:
        return [" ".join(toks)]
    return list({" ".join(toks[i:i + 5]) for i in range(len(toks) - 4)})


parent = list(range(n))


def find(x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def union(a, b):
    a, b = find(a), find(b)
    if a != b:
        parent[max(a, b)] = min(a, b)


def lsh_dedup(lsh, make_minhash):
    """Index every document's MinHash, query each, union pairs with estimated Jaccard >= T."""
    mhs = []
    for i, text in enumerate(texts):
        m = make_minhash(shingles(text))
        mhs.append(m)
        lsh.insert(i, m)
    for i, m in enumerate(mhs):
        for j in lsh.query(m):
            if j != i and m.jaccard(mhs[j]) >= T:
                union(i, j)


if tool == "datasketch":
    from datasketch import MinHash, MinHashLSH

    def datasketch_minhash(sh):
        m = MinHash(num_perm=K, seed=42)
        m.update_batch([s.encode("utf8") for s in sh])
        return m
    lsh_dedup(MinHashLSH(threshold=T, num_perm=K, params=(B, R)), datasketch_minhash)
elif tool == "rensa":
    from rensa import RMinHash, RMinHashLSH

    def rensa_minhash(sh):
        m = RMinHash(num_perm=K, seed=42)
        m.update(sh)
        return m
    lsh_dedup(RMinHashLSH(threshold=T, num_perm=K, num_bands=B), rensa_minhash)
elif tool in ("gaoya-words", "gaoya-canon"):
    from gaoya.minhash import MinHashStringIndex
    if tool == "gaoya-words":
        index = MinHashStringIndex(hash_size=32, jaccard_threshold=T, num_bands=B, band_size=R,
                                   analyzer="word", lowercase=True, ngram_range=(5, 5), id_container="vec")
    else:
        index = MinHashStringIndex(hash_size=32, jaccard_threshold=T, num_bands=B, band_size=R,
                                   analyzer=shingles, id_container="vec")
    docs = [t or "" for t in texts]
    index.par_bulk_insert_docs(list(range(n)), docs)
    for i, hits in enumerate(index.par_bulk_query(docs)):
        for j in hits:
            if j != i:
                union(i, j)
elif tool == "datatrove":
    from loguru import logger
    logger.remove()  # datatrove logs every step to stderr
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (MinhashConfig, MinhashDedupBuckets,
                                                  MinhashDedupCluster, MinhashDedupSignature)
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.utils.hashing import HashConfig
    from datatrove.utils.word_tokenizers import WordTokenizer

    class CanonTokens(WordTokenizer):
        def word_tokenize(self, text):
            return canon.tokens(text)

        def sent_tokenize(self, text):
            return [text]

        def span_tokenize(self, text):
            return [(0, len(text))]

    cfg = MinhashConfig(hash_config=HashConfig(precision=64), n_grams=5, num_buckets=B,
                        hashes_per_bucket=R)
    work = os.path.join(out, "datatrove")
    reader = ParquetReader(corpus, glob_pattern="shard-*.parquet", text_key="text", id_key="id")

    def stage(name, step, tasks=1):
        LocalPipelineExecutor(pipeline=step, tasks=tasks, workers=1,
                              logging_dir=os.path.join(work, "logs", name)).run()
    stage("signatures", [reader, MinhashDedupSignature(os.path.join(work, "sigs"), config=cfg,
                                                       language=CanonTokens())])
    stage("buckets", [MinhashDedupBuckets(os.path.join(work, "sigs"), os.path.join(work, "buckets"),
                                          config=cfg)], tasks=B)
    stage("cluster", [MinhashDedupCluster(os.path.join(work, "buckets"), os.path.join(work, "remove"),
                                          config=cfg, save_cluster_id=True)])
    # Document indices are positions in the reader's order (documents with empty text skipped).
    order = [d.id for d in ParquetReader(corpus, glob_pattern="shard-*.parquet", text_key="text",
                                         id_key="id").run()]
    pos = {doc_id: i for i, doc_id in enumerate(ids)}

    def u32s(name):
        path = os.path.join(work, "remove", name)
        if not os.path.exists(path):
            return []
        import array
        a = array.array("I")
        a.frombytes(open(path, "rb").read())
        return list(a)
    removed = {pos[order[d]] for d in u32s("000000.remove")}
    c = u32s("000000.clusters")
    first = {}
    for d, cid in zip(c[0::2], c[1::2]):
        i = pos[order[d]]
        first[cid] = min(first.get(cid, i), i)
    for d, cid in zip(c[0::2], c[1::2]):
        union(pos[order[d]], first[cid])
else:
    sys.exit(f"unknown tool {tool}")

roots = [find(i) for i in range(n)]
size = {}
for r in roots:
    size[r] = size.get(r, 0) + 1
keep = [roots[i] == i for i in range(n)]
cluster = [roots[i] if size[roots[i]] > 1 else None for i in range(n)]
os.makedirs(out, exist_ok=True)
pq.write_table(pa.table({"id": ids, "keep": keep, "cluster_id": pa.array(cluster, pa.uint64())}),
               os.path.join(out, "manifest.parquet"))
json.dump({"tool": tool, "docs": n, "seconds": time.time() - t0}, open(os.path.join(out, "stats.json"), "w"))
