"""Which measure finds benchmark items in training documents (issue 46, item 2), on a planted set
built from the development corpus, before any of it is built into the job.

Items: one paragraph (12-200 tokens, none of its 13-grams in any other document of the corpus, so
a host holds it only where it is planted) of each of 500 source documents of dev-small (English
and Chinese), each given 4-7 lines of shared benchmark boilerplate ("Example 1:", "Input: nums = [...]",
constraint lines, drawn from one pool), so items share their template the way benchmark items do.
500 items form the reference; 100 held-out items (another paragraph of a reference item's source,
with the same kind of boilerplate) are not in it. Hosts: dev-small documents in no ground-truth
component with a source document. Planted, 100 each: the item as the whole document, the item
inside a host, the item edited (1 token in 40 replaced, spacing and line breaks changed) inside a
host, a contiguous 60% and a contiguous 15% of the item inside a host, and a held-out item inside a
host (must not be flagged); 2,000 hosts stay clean (must not be flagged).

Measures, on the tokens of the ground truth (canon.py: NFKC, lowercase, punctuation to space,
words, a token per CJK character): containment of an item's n-grams in the document (share of the
item's distinct n-grams found) at a threshold, with the n-grams shared by 2 or more reference items
left out of both sides (the reference's own boilerplate) or kept; GPT-3's rule (any shared 13-gram).
The job itself (`--job BINARY`): the planted documents as one shard (id: kind and number) and
the reference items as another, `corpus-dedup run --reference` with its defaults, its manifest's
`contaminated_by` counted per kind, beside the same measures computed here.
usage: measure.py [--job BINARY] (prints a markdown table)
"""
import random
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import polars as pl

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
sys.path.insert(0, str(SHARED / "tools"))
import canon  # noqa: E402

BOILERPLATE = [
    "Example 1:", "Example 2:", "Example 3:", "Input: nums = [2,7,11,15], target = 9",
    "Output: [0,1]", "Input: s = \"abcabcbb\"", "Output: 3", "Constraints:",
    "1 <= nums.length <= 10^4", "-10^9 <= nums[i] <= 10^9", "1 <= s.length <= 5 * 10^4",
    "Explanation: Because nums[0] + nums[1] == 9, we return [0, 1].",
    "You may assume that each input would have exactly one solution.",
    "Return the answer in any order.", "Follow-up: Can you solve it in O(n) time?",
    "Note: the answer is guaranteed to fit in a 32-bit integer.",
    "Answer the question below. Choose the best option.", "A. true B. false C. unknown D. none",
    "Read the passage and answer the question.", "Let's think step by step.",
]


def paragraphs(text):
    out = []
    for p in text.split("\n\n"):
        n = len(canon.tokens(p))
        if 12 <= n <= 200:
            out.append(p.strip())
    return out


def item_text(rng, para):
    lines = rng.sample(BOILERPLATE, rng.randint(4, 7))
    cut = rng.randint(0, len(lines))
    return "\n".join(lines[:cut] + [para] + lines[cut:])


def tokens_of(text):
    return canon.tokens(text)


def cjk(text):
    return any("\u4e00" <= c <= "\u9fff" for c in text)


def span(rng, text, share):
    """A contiguous `share` of the item, cut at token boundaries (characters in Chinese)."""
    units = list(text) if cjk(text) else text.split()
    k = max(1, round(len(units) * share))
    at = rng.randint(0, len(units) - k)
    return ("" if cjk(text) else " ").join(units[at:at + k])


def edit(rng, text, vocab):
    units = text.split(" ") if not cjk(text) else list(text)
    for i in range(len(units)):
        if rng.random() < 1 / 40:
            units[i] = rng.choice(vocab)
    out = ("" if cjk(text) else " ").join(units)
    # spacing and line breaks changed
    out = out.replace("\n", " ").replace(". ", ".\n")
    return out.replace("  ", " ")


def inside(rng, host, piece):
    paras = host.split("\n\n")
    at = rng.randint(0, len(paras))
    return "\n\n".join(paras[:at] + [piece] + paras[at:])


def doc_counts(texts, ids, n=13):
    """For every n-gram hash of the corpus, the number of documents holding it (sorted arrays)."""
    import numpy as np

    parts = [canon.shingles(texts[i], n) for i in ids]
    allh = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    values, counts = np.unique(allh, return_counts=True)
    return values, counts


def unique_text(p, values, counts, n=13):
    """True when no n-gram of `p` is in more than one document of the corpus (its own): text the
    corpus does not repeat elsewhere, so a host holds it only where it was planted."""
    import numpy as np

    h = canon.shingles(p, n)
    if len(h) == 0:
        return False
    at = np.searchsorted(values, h)
    return bool((counts[np.minimum(at, len(counts) - 1)] <= 1).all())


def build(seed=46):
    rng = random.Random(seed)
    docs = pl.concat([pl.read_parquet(p) for p in sorted((SHARED / "dev-small").glob("shard-*.parquet"))])
    comp = pl.read_parquet(SHARED / "dev-small" / "gt_components.parquet")
    comp_of = dict(zip(comp["id"], comp["component"])) if "component" in comp.columns else {}
    texts = dict(zip(docs["id"], docs["text"]))
    ids = sorted(texts)
    values, counts = doc_counts(texts, ids)
    rng.shuffle(ids)
    sources, ref, held = [], [], []
    for i in ids:
        ps = [p for p in paragraphs(texts[i]) if unique_text(p, values, counts)]
        if len(ps) >= 2:
            a, b = rng.sample(ps, 2)
            sources.append(i)
            ref.append(item_text(rng, a))
            held.append(item_text(rng, b))
        if len(sources) == 500:
            break
    held = held[:100]
    used = set(sources)
    source_comps = {comp_of[s] for s in sources if s in comp_of}
    hosts = [i for i in ids if i not in used and comp_of.get(i) not in source_comps]
    rng.shuffle(hosts)
    vocab = [w for t in list(texts.values())[:200] for w in t.split()[:50]]
    planted = defaultdict(list)
    h = iter(hosts)
    for k in range(100):
        item = ref[k]
        planted["whole"].append(item)
        planted["inside"].append(inside(rng, texts[next(h)], item))
        planted["edited"].append(inside(rng, texts[next(h)], edit(rng, item, vocab)))
        planted["60%"].append(inside(rng, texts[next(h)], span(rng, item, 0.6)))
        planted["15%"].append(inside(rng, texts[next(h)], span(rng, item, 0.15)))
        planted["not in reference"].append(inside(rng, texts[next(h)], held[k]))
    planted["clean"] = [texts[next(h)] for _ in range(2000)]
    return ref, planted


def gram_sets(text, n):
    t = tokens_of(text)
    if len(t) < n:
        return set()
    return {tuple(t[i:i + n]) for i in range(len(t) - n + 1)}


def rule_flags(ref, planted, n, threshold, drop_shared, shared_items=2):
    """Per kind, the share of documents flagged: containment of some item >= threshold (threshold
    None: any shared n-gram, GPT-3's rule); with `drop_shared`, the n-grams of `shared_items` or
    more items left out."""
    items = [gram_sets(r, n) for r in ref]
    df = defaultdict(int)
    for s in items:
        for g in s:
            df[g] += 1
    if drop_shared:
        items = [{g for g in s if df[g] < shared_items} for s in items]
    postings = defaultdict(list)
    for j, s in enumerate(items):
        for g in s:
            postings[g].append(j)
    out = {}
    for kind, docs in planted.items():
        hit = 0
        for d in docs:
            counts = defaultdict(int)
            for g in gram_sets(d, n):
                for j in postings.get(g, ()):
                    counts[j] += 1
            if threshold is None:
                hit += bool(counts)
            else:
                hit += any(c / len(items[j]) >= threshold for j, c in counts.items() if items[j])
        out[kind] = hit / len(docs)
    short = sum(1 for s in items if not s)
    return out, short


def job_flags(binary, ref, planted):
    """Per kind, the share of documents the job's `--reference` flags."""
    with tempfile.TemporaryDirectory() as tmp:
        ids = [f"{k}-{i}" for k, docs in planted.items() for i in range(len(docs))]
        texts = [d for docs in planted.values() for d in docs]
        pl.DataFrame({"id": ids, "text": texts}).write_parquet(f"{tmp}/docs.parquet")
        pl.DataFrame({"id": [f"item-{i}" for i in range(len(ref))], "text": ref}).write_parquet(
            f"{tmp}/bench.parquet")
        subprocess.run([binary, "run", "--input", f"{tmp}/docs.parquet", "--output", f"{tmp}/out",
                        "--reference", f"{tmp}/bench.parquet", "--quiet"], check=True,
                       stdout=subprocess.DEVNULL)
        m = pl.read_parquet(f"{tmp}/out/manifest.parquet")
    flagged = set(m.filter(pl.col("contaminated_by").is_not_null())["id"])
    return {k: sum(f"{k}-{i}" in flagged for i in range(len(docs))) / len(docs)
            for k, docs in planted.items()}


def main():
    ref, planted = build()
    kinds = list(planted)
    total = sum(len(v) for v in planted.values())
    print(f"{len(ref)} reference items; documents per kind: "
          + ", ".join(f"{k} {len(v)}" for k, v in planted.items()))
    print()
    print("| measure | " + " | ".join(kinds) + " | documents flagged |")
    print("|---|" + "---|" * (len(kinds) + 1))
    def row(name, flags):
        flagged = round(sum(flags[k] * len(planted[k]) for k in kinds))
        print(f"| {name} | " + " | ".join(f"{100 * flags[k]:.0f}%" for k in kinds)
              + f" | {flagged} of {total} |")

    if "--job" in sys.argv:
        binary = sys.argv[sys.argv.index("--job") + 1]
        row("**corpus-dedup --reference** (n=8 >= 0.3, n-grams of 2+ items left out)",
            job_flags(binary, ref, planted))
        row("the same rule computed here", rule_flags(ref, planted, 8, 0.3, True, 2)[0])
        row("the same with the n-grams of 3+ items left out",
            rule_flags(ref, planted, 8, 0.3, True, 3)[0])
    out = ", boilerplate of the reference left out"
    rows = [(f"containment n={n} >= {t}{out}", n, t, True)
            for n in (8, 13) for t in (0.2, 0.3, 0.5)]
    rows += [("containment n=8 >= 0.3, boilerplate kept", 8, 0.3, False),
             (f"containment n=5 >= 0.3{out}", 5, 0.3, True),
             ("GPT-3: any shared 13-gram", 13, None, False),
             (f"any shared 13-gram{out}", 13, None, True)]
    for name, n, t, drop in rows:
        row(name, rule_flags(ref, planted, n, t, drop)[0])


main()
