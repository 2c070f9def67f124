"""--partition-by and --across measured on the development corpora (benches/signals/run.sh).

1. Equivalence: `--partition-by` in one run against one run per value, document by document
   (keep and duplicate_of): dev-small by lang (joined in from docs_meta.parquet) and by a source
   drawn per document from its id (a, b, c: most planted pairs cross values; also with SimHash
   and its whole-night feature sample off), multi by lang.
2. --across against its ideal on dev-small's exact ground truth: documents in input order, one
   dropped iff a ground-truth partner (exact Jaccard >= 0.8) of another value was kept before it.
   Values: a source drawn per document from its id (a, b, c: most planted pairs cross sources)
   and the corpus's own base_src (planted copies share it: few cross pairs).
usage: check.py BINARY WORKDIR
"""
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

BIN, WORK = sys.argv[1], Path(sys.argv[2])
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


def run(glob, out, *flags):
    t = time.time()
    subprocess.run([BIN, "run", "--quiet", "--threads", "2", "--input", glob, "--output", str(out),
                    *flags], check=True, stdout=subprocess.DEVNULL)
    return time.time() - t


def labelled_dev_small():
    """dev-small's shards with lang, base_src and a drawn source column, shard by shard."""
    meta = pl.read_parquet(SHARED / "dev-small" / "docs_meta.parquet").select("id", "lang", "base_src")
    out = WORK / "dev-small"
    out.mkdir(parents=True, exist_ok=True)
    for shard in sorted((SHARED / "dev-small").glob("shard-*.parquet")):
        df = pl.read_parquet(shard).join(meta, on="id", how="left", maintain_order="left")
        src = [("a", "b", "c")[hashlib.blake2b(i.encode(), digest_size=4).digest()[0] % 3]
               for i in df["id"]]
        df.with_columns(src=pl.Series(src)).write_parquet(out / shard.name)
    return out


def equivalence(name, shards, column, *flags):
    glob = f"{shards}/*.parquet"
    name = "-".join([name, column, *flags])
    together = WORK / f"{name}-partitioned"
    t_one = run(glob, together, "--partition-by", column, *flags)
    plain = WORK / f"{name}-plain"
    t_plain = run(glob, plain, *flags)
    m = pl.read_parquet(together / "manifest.parquet").select("id", "keep", "duplicate_of")
    values = pl.read_parquet(glob).select(column).unique()[column].to_list()
    t_sep, mismatches, compared = 0.0, 0, 0
    for v in values:
        d = WORK / f"{name}-only-{v}"
        d.mkdir(parents=True, exist_ok=True)
        for shard in sorted(shards.glob("*.parquet")):
            part = pl.read_parquet(shard).filter(pl.col(column).eq_missing(v))
            if part.height:
                part.write_parquet(d / shard.name)
        t_sep += run(f"{d}/*.parquet", WORK / f"{name}-alone-{v}", *flags)
        alone = pl.read_parquet(WORK / f"{name}-alone-{v}" / "manifest.parquet").select("id", "keep", "duplicate_of")
        j = alone.join(m, on="id", suffix="_together")
        compared += j.height
        mismatches += j.filter((pl.col("keep") != pl.col("keep_together"))
                               | ~pl.col("duplicate_of").eq_missing(pl.col("duplicate_of_together"))).height
    plain_drops = pl.read_parquet(plain / "manifest.parquet").filter(~pl.col("keep")).height
    return {"corpus": name, "column": column, "flags": " ".join(flags), "values": len(values), "documents": m.height,
            "compared": compared, "mismatches": mismatches,
            "drops_partitioned": m.filter(~pl.col("keep")).height, "drops_plain": plain_drops,
            "seconds_one_run": round(t_one, 2), "seconds_plain": round(t_plain, 2),
            "seconds_runs_per_value": round(t_sep, 2)}


def across(shards, column):
    glob = f"{shards}/*.parquet"
    out = WORK / f"across-{column}"
    run(glob, out, "--across", column)
    m = pl.read_parquet(out / "manifest.parquet").select("id", "keep", "duplicate_of")
    docs = pl.read_parquet(glob).select("id", column)
    label = dict(zip(docs["id"], docs[column]))
    order = {i: n for n, i in enumerate(m["id"])}
    gt = pl.read_parquet(SHARED / "dev-small" / "gt_pairs.parquet")
    partners = {}
    for a, b in zip(gt["id_a"], gt["id_b"]):
        partners.setdefault(a, []).append(b)
        partners.setdefault(b, []).append(a)
    kept = set()
    ideal_drop = set()
    for i in m["id"]:
        if any(p in kept and label[p] != label[i] and order[p] < order[i] for p in partners.get(i, [])):
            ideal_drop.add(i)
        else:
            kept.add(i)
    ours = set(m.filter(~pl.col("keep"))["id"])
    same_value = m.filter(pl.col("duplicate_of").is_not_null()).filter(
        pl.col("id").replace_strict(label) == pl.col("duplicate_of").replace_strict(label)).height
    return {"column": column, "ideal_drops": len(ideal_drop), "drops": len(ours),
            "missed": len(ideal_drop - ours), "extra": len(ours - ideal_drop),
            "deviation": round(len(ideal_drop ^ ours) / max(1, len(ideal_drop)), 4),
            "dropped_against_own_value": same_value}


def main():
    WORK.mkdir(parents=True, exist_ok=True)
    dev = labelled_dev_small()
    results = {
        "partition": [equivalence("dev-small", dev, "lang"),
                      equivalence("dev-small", dev, "src"),
                      equivalence("dev-small", dev, "src", "--method", "simhash",
                                  "--simhash-max-df", "1"),
                      equivalence("multi", SHARED / "multi" / "data", "lang")],
        "across": [across(dev, "src"), across(dev, "base_src")],
    }
    print(json.dumps(results, indent=1))


main()
