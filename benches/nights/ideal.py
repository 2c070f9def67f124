# Ideal incremental drops: night n keeps one document per component of the ground-truth graph over
# nights <= n that holds no document of an earlier night (nothing indexed is ever dropped later).
import sys, pyarrow.parquet as pq
d = sys.argv[1]; nights = int(sys.argv[2]); shards_per = int(sys.argv[3])
night = {}
for s in range(nights * shards_per):
    t = pq.read_table(f"{d}/shard-{s:05d}.parquet", columns=["id"])
    for i in t.column("id").to_pylist(): night[i] = s // shards_per + 1
pairs = pq.read_table(f"{d}/gt_pairs.parquet").to_pydict()
ka, kb = list(pairs.keys())[:2]
edges = list(zip(pairs[ka], pairs[kb]))
total = 0
for n in range(1, nights + 1):
    parent = {}
    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]; x = parent[x]
        return x
    for a, b in edges:
        if night[a] <= n and night[b] <= n:
            ra, rb = find(a), find(b)
            if ra != rb: parent[ra] = rb
    tonight = [i for i, v in night.items() if v == n]
    comps = {}
    for i in tonight: comps.setdefault(find(i), []).append(i)
    old = {find(i) for i, v in night.items() if v < n and i in parent}
    drops = sum(len(m) - (0 if r in old else 1) for r, m in comps.items())
    print("night", n, "ideal drops", drops); total += drops
print("ideal incremental total", total)
