"""Labels an audit's pairs from a corpus's exact truth, and the true precision of all the run's
drops under the same rule: a drop is right when (dropped, kept) is a true pair.

    python benches/audit/truth.py OUT dev-small DIR   # DIR/gt_pairs.parquet: Jaccard >= 0.8
    python benches/audit/truth.py OUT multi DIR       # DIR/pairs.csv: planted pairs, true_dup
Writes OUT/labels.json; prints {"drops": N, "true_precision": X}.
"""
import csv
import json
import sys

import pyarrow.parquet as pq

out, kind, truth_dir = sys.argv[1], sys.argv[2], sys.argv[3]
truth = set()
if kind == "dev-small":
    g = pq.read_table(f"{truth_dir}/gt_pairs.parquet", columns=["id_a", "id_b"]).to_pydict()
    pairs = zip(g["id_a"], g["id_b"])
else:
    pairs = [(r["a"], r["b"]) for r in csv.DictReader(open(f"{truth_dir}/pairs.csv")) if r["true_dup"] == "1"]
for a, b in pairs:
    truth.update({(a, b), (b, a)})
p = pq.read_table(f"{out}/audit-pairs.parquet", columns=["pair", "dropped_id", "kept_id"]).to_pydict()
labels = {x: "y" if (d, k) in truth else "n" for x, d, k in zip(p["pair"], p["dropped_id"], p["kept_id"])}
json.dump(labels, open(f"{out}/labels.json", "w"))
m = pq.read_table(f"{out}/manifest.parquet", columns=["id", "keep", "duplicate_of", "similarity"]).to_pydict()
drops = [(i, d) for i, k, d, s in zip(m["id"], m["keep"], m["duplicate_of"], m["similarity"])
         if k is False and d is not None and s is not None]
right = sum((i, d) in truth for i, d in drops)
print(json.dumps({"drops": len(drops), "true_precision": right / max(len(drops), 1)}))
