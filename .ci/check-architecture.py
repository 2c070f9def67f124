#!/usr/bin/env python3
"""Fails when docs/ARCHITECTURE.md names a source path that does not exist, a source file under
src/ is over 600 lines (split it by concept: docs/ARCHITECTURE.md, "Layout"), docs/PERFORMANCE.md
is over 500 lines (today's figures only: details and history go to benches/results/), or a row
of the README's headline table is not a row of docs/PERFORMANCE.md.

A path is a backticked name ending in `.rs` or `/` (`stages/cluster/keeper.rs`, `index/`). It
is looked up under the folder of the section it is in (a heading naming `src/...`), then under
`src/`, then from the repository root (`jobs/slurm/`, `python/`), then beside a path named
earlier in the same bullet or paragraph (`config/`: `mod.rs`, `settings.rs`).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
LIMIT = 600
PERFORMANCE_LIMIT = 500

missing, folder, context = [], "src", []
for n, line in enumerate((ROOT / "docs/ARCHITECTURE.md").read_text().splitlines(), 1):
    if line.startswith("#"):
        m = re.search(r"`(src(?:/[\w]+)*)/?`", line)
        folder = m.group(1) if m else "src"
    # A bullet or paragraph that names a folder (`config/`) names its files after it bare.
    if not line.strip() or line.startswith("#") or line.lstrip().startswith("- "):
        context = []
    for name in re.findall(r"`([\w./-]+(?:\.rs|/))`", line):
        name = name.rstrip("/")
        bases = [ROOT / folder, SRC, ROOT] + context
        found = next((b / name for b in bases if (b / name).exists()), None)
        if found is None:
            missing.append(f"docs/ARCHITECTURE.md:{n}: `{name}` is not under {folder}/, src/ or the root")
        elif found.is_dir():
            context.append(found)
        else:
            context.append(found.parent)

long = []
for p in sorted(SRC.rglob("*.rs")):
    lines = p.read_text().count("\n")
    if lines > LIMIT:
        long.append(f"{p.relative_to(ROOT)}: {lines} lines (at most {LIMIT})")

performance = (ROOT / "docs/PERFORMANCE.md").read_text().count("\n")
if performance > PERFORMANCE_LIMIT:
    long.append(
        f"docs/PERFORMANCE.md: {performance} lines (at most {PERFORMANCE_LIMIT}: details to benches/results/)"
    )

# The README's headline table is rows of docs/PERFORMANCE.md, copied, never retyped.
readme = (ROOT / "README.md").read_text().splitlines()
perf = set((ROOT / "docs/PERFORMANCE.md").read_text().splitlines())
at = next(i for i, l in enumerate(readme) if "rows copied from docs/PERFORMANCE.md" in l)
rows = []
for l in readme[at + 1 :]:
    if not l.startswith("|"):
        break
    rows.append(l)
table = [] if rows else ["README.md: no table after the 'rows copied' marker"]
for l in rows:
    if l not in perf:
        table.append(f"README.md: a table row not in docs/PERFORMANCE.md: {l[:80]}")

for m in missing + long + table:
    print(m)
print(f"check-architecture: {len(missing)} missing paths, {len(long)} files over their line limit")
sys.exit(1 if missing or long or table else 0)
