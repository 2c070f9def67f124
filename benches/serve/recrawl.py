"""A real re-crawl for `make bench-serve-recrawl`: the documentation of three projects as their
source releases ship it (Django, SQLAlchemy, Sphinx; .txt / .rst pages under doc/ or docs/),
four successive releases each, one release a night. Pages stay, change a little, move, appear
and go between releases, as on a site crawled again. Downloads the source releases from PyPI
(pip download) into DIR/sdists once, and writes DIR/night-N.parquet (id: release/path, text).
    python recrawl.py DIR"""
import io
import pathlib
import subprocess
import sys
import tarfile

import pyarrow as pa
import pyarrow.parquet as pq

RELEASES = {
    "django": ["4.2", "5.0", "5.1", "5.2"],
    "sqlalchemy": ["2.0.0", "2.0.10", "2.0.20", "2.0.30"],
    "sphinx": ["7.0.0", "7.1.0", "7.2.0", "7.3.0"],
}


def sdist(dest, project, version):
    """The source release's path in `dest`, downloaded unless there."""
    found = [p for p in dest.glob("*.tar.gz") if p.name.lower() == f"{project}-{version}.tar.gz"]
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--no-binary", ":all:", f"{project}=={version}", "-d", str(dest)], check=True)
        found = [p for p in dest.glob("*.tar.gz") if p.name.lower() == f"{project}-{version}.tar.gz"]
    return found[0]


def pages(path):
    """(id, text) of each documentation page of a source release, in path order."""
    out = []
    with tarfile.open(path) as tar:
        for m in sorted(tar.getmembers(), key=lambda m: m.name):
            parts = m.name.split("/")
            if m.isfile() and len(parts) > 2 and parts[1] in ("doc", "docs") and m.name.endswith((".txt", ".rst")):
                text = tar.extractfile(m).read().decode("utf-8", errors="replace")
                out.append((m.name, text))
    return out


def main(root):
    root = pathlib.Path(root)
    dest = root / "sdists"
    dest.mkdir(parents=True, exist_ok=True)
    for night in range(4):
        docs = [d for project, versions in RELEASES.items() for d in pages(sdist(dest, project, versions[night]))]
        table = pa.table({"id": [d[0] for d in docs], "text": [d[1] for d in docs]})
        pq.write_table(table, root / f"night-{night + 1}.parquet")
        print(f"night {night + 1}: {len(docs)} pages, {sum(len(d[1].encode()) for d in docs) / 2**20:.1f} MiB")


if __name__ == "__main__":
    main(sys.argv[1])
