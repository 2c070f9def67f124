import sys, pyarrow.parquet as pq, pyarrow as pa
outs = sys.argv[2:]; dst = sys.argv[1]
tabs = [pq.read_table(o + '/manifest.parquet') for o in outs]
t = pa.concat_tables([x.select(['id','file','row','keep','duplicate_of']) for x in tabs])
ids = t.column('id').to_pylist(); dup = t.column('duplicate_of').to_pylist()
parent = {i: i for i in ids}
def find(x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]; x = parent[x]
    return x
for i, d in zip(ids, dup):
    if d is not None:
        a, b = find(i), find(d)
        if a != b: parent[a] = b
roots = [find(i) for i in ids]
size = {}
for r in roots: size[r] = size.get(r, 0) + 1
num = {i: k for k, i in enumerate(ids)}
cid = [num[r] if size[r] > 1 else None for r in roots]
t = t.append_column('cluster_id', pa.array(cid, pa.uint64()))
import os; os.makedirs(dst, exist_ok=True)
pq.write_table(t, dst + '/manifest.parquet')
