"""The Python package against the command line it wraps: the same manifest byte for byte, the
same error text, and the signature kernels over every column type (make test runs this after
python/build.sh installed the wheel)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

import corpus_dedup as cd

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = str(ROOT / "data-samples" / "synthetic" / "*.parquet")
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "corpus-dedup-target"))
BINARY = str(TARGET / "release" / "corpus-dedup")
SCRIPT = str(Path(sys.executable).parent / "corpus-dedup")

TEXTS = [
    "the quick brown fox jumps over the lazy dog again and again",
    None,
    "",
    "ภาษาไทยเป็นภาษาราชการของประเทศไทย คนไทยส่วนใหญ่พูดภาษาไทย",
    "我们中出了一个叛徒，今天天气很好",
]


def cli(*args):
    return subprocess.run([BINARY, *args], capture_output=True, text=True)


def test_run_gives_the_cli_manifest_byte_for_byte(tmp_path):
    done = cli("run", "--input", SAMPLES, "--output", str(tmp_path / "cli"), "--threshold", "0.85",
               "--keep", "longest", "--quiet")
    assert done.returncode == 0, done.stderr
    manifest = cd.run(SAMPLES, str(tmp_path / "py"), threshold=0.85, keep="longest")
    cli_bytes = (tmp_path / "cli" / "manifest.parquet").read_bytes()
    assert (tmp_path / "py" / "manifest.parquet").read_bytes() == cli_bytes
    assert manifest.equals(pl.read_parquet(tmp_path / "cli" / "manifest.parquet"))
    assert manifest.height == 600 and manifest.filter(~pl.col("keep")).height > 0
    assert cd.summary(str(tmp_path / "py"))["documents_in"] == 600
    assert cd.read_manifest(str(tmp_path / "py")).equals(manifest)


def test_a_sweep_counts_each_threshold_as_the_cli_does(tmp_path):
    done = cli("run", "--input", SAMPLES, "--output", str(tmp_path / "cli"), "--sweep",
               "0.7,0.8,0.9", "--quiet")
    assert done.returncode == 0, done.stderr
    manifest = cd.run(SAMPLES, str(tmp_path / "py"), sweep=[0.9, 0.7, 0.8])
    rows = cd.summary(str(tmp_path / "py"))["sweep"]
    assert rows == json.loads((tmp_path / "cli" / "summary.json").read_text())["sweep"]
    assert [r["threshold"] for r in rows] == [0.7, 0.8, 0.9]
    assert rows[0]["dropped"] >= rows[1]["dropped"] >= rows[2]["dropped"]
    # The manifest is the run's threshold's (0.8), as without the sweep.
    assert manifest.equals(cd.run(SAMPLES, str(tmp_path / "plain")))
    with pytest.raises(cd.ConfigError, match="does not list the run's threshold"):
        cd.run(SAMPLES, str(tmp_path / "bad"), sweep=[0.7, 0.9])


def test_a_bad_input_raises_error_with_the_cli_text(tmp_path):
    missing = str(tmp_path / "nothing-*.parquet")
    done = cli("run", "--input", missing, "--output", str(tmp_path / "a"))
    assert done.returncode == 1
    with pytest.raises(cd.Error) as e:
        cd.run(missing, str(tmp_path / "a"))
    assert isinstance(e.value, Exception)
    assert done.stderr.strip() == f"error: {e.value}"
    with pytest.raises(cd.Error, match="unknown keyword argument `thresold`"):
        cd.run(SAMPLES, str(tmp_path / "b"), thresold=0.9)
    with pytest.raises(cd.Error, match="threshold"):
        cd.run(SAMPLES, str(tmp_path / "c"), threshold=1.5)
    # The command line's --quiet as a keyword is accepted (it was a TypeError).
    assert cd.run(SAMPLES, str(tmp_path / "d"), quiet=True).height == 600


def test_errors_raise_a_class_per_kind(tmp_path):
    # Each a corpus_dedup.Error, with the command line's message.
    with pytest.raises(cd.InputError, match="matches no file"):
        cd.run(str(tmp_path / "nothing-*.parquet"), str(tmp_path / "a"))
    with pytest.raises(cd.ConfigError, match="threshold"):
        cd.run(SAMPLES, str(tmp_path / "b"), threshold=1.5)
    with pytest.raises(cd.ConfigError, match="unknown keyword argument"):
        cd.run(SAMPLES, str(tmp_path / "c"), thresold=0.9)
    with pytest.raises(cd.ConfigError, match="keyword argument `num_perm`: invalid type"):
        cd.run(SAMPLES, str(tmp_path / "c"), num_perm="many")
    with pytest.raises(cd.InputError, match="no column 'lang'"):
        cd.run(SAMPLES, str(tmp_path / "d"), partition_by="lang")
    # An index another process holds (its lock file flocked, as a run does): retry later.
    import fcntl

    index = tmp_path / "index"
    cd.run(SAMPLES, str(tmp_path / "e"), index=str(index), batch="2026-11-01")
    with open(index / "LOCK", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(cd.BusyError, match="in use"):
            cd.run(SAMPLES, str(tmp_path / "f"), index=str(index), batch="2026-11-02")
    with pytest.raises(cd.IndexStateError, match="it was built with"):
        cd.run(SAMPLES, str(tmp_path / "g"), index=str(index), batch="2026-11-02", num_perm=64)
    with pytest.raises(cd.ConfigError, match="no document with id"):
        cd.explain(str(tmp_path / "e"), "no-such-id")
    with pytest.raises(cd.ConfigError, match="not both"):
        cd.run(SAMPLES, str(tmp_path / "h"), quiet=True, progress=False)
    # An output that cannot be written: storage.
    with pytest.raises(cd.StorageError, match="cannot write output"):
        cd.run(SAMPLES, "/dev/null/out")
    for cls in (cd.ConfigError, cd.InputError, cd.StorageError, cd.BusyError, cd.IndexStateError):
        assert issubclass(cls, cd.Error)


def test_the_console_script_is_the_cli(tmp_path):
    assert shutil.which(SCRIPT)
    for args in (["--version"], ["run", "--input", str(tmp_path / "x-*.parquet"), "--output",
                                 str(tmp_path / "o")]):
        ours, theirs = subprocess.run([SCRIPT, *args], capture_output=True, text=True), cli(*args)
        assert (ours.returncode, ours.stdout, ours.stderr) == \
            (theirs.returncode, theirs.stdout, theirs.stderr)
    help_text = subprocess.run([SCRIPT, "run", "--help"], capture_output=True, text=True).stdout
    assert "[default: 0.8]" in help_text


def test_apply_and_explain_as_the_cli_does(tmp_path):
    out = str(tmp_path / "out")
    manifest = cd.run(SAMPLES, out)
    dry = cd.apply(out, str(tmp_path / "dedup"), dry_run=True)
    assert dry["dry_run"] and dry["rows_in"] == 600
    done = cd.apply(out, str(tmp_path / "dedup"), dropped=str(tmp_path / "dropped"))
    assert done["rows_kept"] == manifest["keep"].sum()
    kept = pl.read_parquet(tmp_path / "dedup" / "*.parquet")
    assert kept.height == done["rows_kept"]
    drop = manifest.filter(~pl.col("keep"))["id"][0]
    e = cd.explain(out, drop)
    line = cli("explain", out, "--id", drop, "--json")
    assert e == json.loads(line.stdout)
    with pytest.raises(cd.Error, match="no document with id"):
        cd.explain(out, "no-such-id")


def test_signals_partition_by_and_rehydration(tmp_path):
    # data-samples' integer `source` column as the partition: the new column, options and apply.
    out = str(tmp_path / "out")
    manifest = cd.run(SAMPLES, out, partition_by="source")
    assert manifest["cluster_size"].dtype == pl.UInt32
    kept = manifest.filter(pl.col("keep"))
    assert manifest.filter(pl.col("cluster_size") > 1).height > 0
    assert cd.summary(out)["config"]["partition_by"] == "source"
    done = cd.apply(out, str(tmp_path / "mix"), cluster_size_column="n", upsample="1=1,2-=2")
    want = kept.select(pl.when(pl.col("cluster_size") >= 2).then(2).otherwise(1)).sum().item()
    assert done["rows_written"] == want
    mix = pl.read_parquet(tmp_path / "mix" / "*.parquet")
    assert mix.height == want and mix["n"].dtype == pl.UInt32
    with pytest.raises(cd.Error, match="--upsample"):
        cd.apply(out, str(tmp_path / "bad"), upsample="2=0")
    drop = manifest.filter(~pl.col("keep")).row(0, named=True)
    assert cd.explain(out, drop["id"])["cluster_size"] == drop["cluster_size"]


def test_reference_flags_documents_holding_benchmark_items(tmp_path):
    # Two sample texts as benchmark items (integer ids): the documents holding them are dropped.
    texts = pl.read_parquet(SAMPLES).filter(pl.col("text").str.len_chars() > 400)["text"][:2]
    bench = tmp_path / "bench.parquet"
    pl.DataFrame({"qid": [7, 8], "prompt": texts}).write_parquet(bench)
    out = str(tmp_path / "out")
    manifest = cd.run(SAMPLES, out, reference=str(bench), reference_id_column="qid",
                      reference_text_column="prompt")
    assert manifest["contamination"].dtype == pl.Float32
    flagged = manifest.filter(pl.col("contaminated_by").is_not_null())
    assert set(flagged["contaminated_by"]) == {"7", "8"}
    assert not flagged["keep"].any()
    assert cd.summary(out)["contamination"]["documents"] == flagged.height
    row = flagged.row(0, named=True)
    assert cd.explain(out, row["id"])["contamination"]["item"] == row["contaminated_by"]
    with pytest.raises(cd.InputError, match="--reference"):
        cd.run(SAMPLES, str(tmp_path / "bad"), reference=str(tmp_path / "none-*.parquet"))


def as_lists(series):
    return [None if v is None else list(v) for v in series.to_list()]


def test_minhash_is_the_same_for_every_input_type_keeps_nulls_and_is_deterministic():
    want = cd.minhash(pl.Series("text", TEXTS))
    assert want.dtype == pl.Array(pl.UInt32, 128) and want.name == "text"
    assert want.is_null().to_list() == [t is None for t in TEXTS]
    # An empty text has no shingle: every value stays at the maximum, as in the job.
    assert set(want[2].to_list()) == {2**32 - 1}
    chunked = pa.chunked_array([TEXTS[:2], TEXTS[2:]])
    for texts in (TEXTS, pa.array(TEXTS), pa.array(TEXTS, pa.large_string()), chunked,
                  pl.Series(TEXTS).cast(pl.String)):
        assert as_lists(cd.minhash(texts)) == as_lists(want)
    assert as_lists(cd.minhash(TEXTS)) == as_lists(cd.minhash(TEXTS))
    # The settings change the values as they change the job's.
    assert cd.minhash(TEXTS, num_perm=64).dtype == pl.Array(pl.UInt32, 64)
    # No argument is the job's defaults, defined once in Rust (`run --help` shows them).
    assert want.dtype == pl.Array(pl.UInt32, 128)
    explicit = cd.minhash(TEXTS, num_perm=128, seed=42, ngram=5, tokenizer="auto", sketch="oph")
    assert as_lists(explicit) == as_lists(want)
    assert as_lists(cd.minhash(TEXTS, seed=7)) != as_lists(want)
    assert as_lists(cd.minhash(TEXTS, sketch="classic")) != as_lists(want)
    with pytest.raises(cd.Error, match="strings"):
        cd.minhash(pa.array([1, 2]))
    with pytest.raises(cd.Error, match="list of str"):
        cd.minhash(42)


def test_minhash_agrees_with_the_exact_jaccard():
    a = "the quick brown fox jumps over the lazy dog " * 3 + "again and again and again"
    b = a.replace("again and again and again", "again and again and more")
    sig = cd.minhash([a, b])
    agree = sum(x == y for x, y in zip(sig[0].to_list(), sig[1].to_list())) / 128
    assert abs(agree - cd.jaccard(a, b)) < 0.2


def test_jaccard_matches_the_rust_tests():
    a = "the quick brown fox jumps over the lazy dog again and again"
    b = "the quick brown fox jumps over the lazy cat again and again"
    # src/text/sets.rs: 10 trigrams each, 3 differ on each side.
    assert cd.jaccard(a, b, ngram=3) == pytest.approx(7 / 13, abs=1e-12)
    assert cd.jaccard(a, a) == 1.0
    assert cd.jaccard("ที่นี่", "ที่นี่") == 1.0


def test_simhash_fingerprints():
    fp = cd.simhash(pl.Series("text", TEXTS))
    assert fp.dtype == pl.UInt64 and fp.is_null().to_list() == [t is None for t in TEXTS]
    assert fp.to_list() == cd.simhash(pa.array(TEXTS)).to_list()
    near = cd.simhash([TEXTS[0] * 3, TEXTS[0] * 3 + " and once more"]).to_list()
    assert bin(near[0] ^ near[1]).count("1") <= 8


def test_a_polars_pipeline_with_map_batches():
    df = pl.DataFrame({"id": range(len(TEXTS)), "text": TEXTS})
    eager = df.with_columns(sig=pl.col("text").map_batches(cd.minhash))
    lazy = df.lazy().with_columns(
        sig=pl.col("text").map_batches(cd.minhash, return_dtype=pl.Array(pl.UInt32, 128))
    ).collect()
    assert eager.equals(lazy)
    assert eager.schema["sig"] == pl.Array(pl.UInt32, 128)
    assert eager["sig"].null_count() == 1


def test_the_ray_data_batch_form():
    table = pa.table({"id": list(range(len(TEXTS))), "text": TEXTS})
    out = cd.minhash_batch(table)
    assert out.column_names == ["id", "text", "minhash"]
    assert out.column("minhash").to_pylist() == as_lists(cd.minhash(TEXTS))
    as_dict = cd.minhash_batch({"text": TEXTS})
    assert as_dict["minhash"] == out.column("minhash").to_pylist()


def test_paragraphs_give_drop_spans_and_the_helper_cuts_them_as_apply_does(tmp_path):
    licence = " ".join(f"licence{i}" for i in range(20))
    texts = [f"Doc {i}\n\n{' '.join(f'own{i}w{j}' for j in range(15))}\n\n{licence}" for i in range(6)]
    shard = tmp_path / "s.parquet"
    pl.DataFrame({"id": [f"d{i}" for i in range(6)], "text": texts}).write_parquet(shard)
    out = str(tmp_path / "out")
    manifest = cd.run(str(shard), out, paragraphs=True)
    spans = manifest["drop_spans"]
    assert spans.list.len().to_list() == [0, 1, 1, 1, 1, 1]
    assert spans[1][0]["retained_by"] == "d0"
    assert cd.summary(out)["paragraphs"]["removed"] == 5
    cut = cd.drop_spans(pl.Series(texts), spans)
    cd.apply(out, str(tmp_path / "dedup"))
    assert cut.to_list() == pl.read_parquet(tmp_path / "dedup" / "s.parquet")["text"].to_list()
    assert cut[0] == texts[0] and licence not in cut[1]
    with pytest.raises(cd.Error, match="row 0"):
        bad = pl.Series([[{"start": 5, "end": 999}]])
        cd.drop_spans(pl.Series(["short"]), bad)


def test_substrings_cut_repeated_runs_and_keep_the_first_copy(tmp_path):
    disclaimer = " ".join(f"disclaimer{i}" for i in range(30))
    texts = [f"{' '.join(f'own{i}w{j}' for j in range(25))} {disclaimer} end {i}" for i in range(5)]
    shard = tmp_path / "s.parquet"
    pl.DataFrame({"id": [f"d{i}" for i in range(5)], "text": texts}).write_parquet(shard)
    out = str(tmp_path / "out")
    manifest = cd.run(str(shard), out, substrings=True, substring_min_bytes=64)
    spans = manifest["drop_spans"]
    assert spans[0].to_list() == []
    assert all(s["retained_by"] == "d0" for row in spans[1:] for s in row)
    s = cd.summary(out)["substrings"]
    assert s["min_bytes"] == 64 and s["bytes_removed"] > 4 * (len(disclaimer) - 64)
    cut = cd.drop_spans(pl.Series(texts), spans)
    assert cut[0] == texts[0] and all(disclaimer[40:-40] not in t for t in cut[1:])


def test_jsonl_input_and_apply_as_for_parquet(tmp_path):
    # The real sample in both formats: the same decisions; apply gives back kept lines as they were.
    real = ROOT / "data-samples"
    pq = cd.run(str(real / "rust-docs.parquet"), str(tmp_path / "pq"))
    jl = cd.run(str(real / "rust-docs.jsonl.gz"), str(tmp_path / "jl"))
    assert pq.drop("file").equals(jl.drop("file"))
    assert jl.filter(~pl.col("keep")).height > 0
    done = cd.apply(str(tmp_path / "jl"), str(tmp_path / "kept"))
    assert done["rows_kept"] == jl.filter(pl.col("keep")).height
    import gzip
    lines = gzip.open(real / "rust-docs.jsonl.gz").read().splitlines(keepends=True)
    kept = [line for line, k in zip(lines, jl["keep"]) if k]
    assert gzip.open(tmp_path / "kept" / "rust-docs.jsonl.gz").read() == b"".join(kept)
    # As Parquet: the kept rows the Parquet run's apply gives.
    cd.apply(str(tmp_path / "jl"), str(tmp_path / "as-pq"), format="parquet")
    cd.apply(str(tmp_path / "pq"), str(tmp_path / "kept-pq"))
    got = pl.read_parquet(tmp_path / "as-pq" / "rust-docs.parquet")
    want = pl.read_parquet(tmp_path / "kept-pq" / "rust-docs.parquet")
    assert got.select(want.columns).equals(want)
    with pytest.raises(cd.Error, match="expected parquet, jsonl"):
        cd.apply(str(tmp_path / "jl"), str(tmp_path / "x"), format="csv")


def test_index_and_client_decide_as_the_server(tmp_path):
    index = str(tmp_path / "index")
    files = sorted(Path(ROOT / "data-samples" / "synthetic").glob("*.parquet"))
    night1 = pl.read_parquet(files[0])
    cd.run(str(files[0]), str(tmp_path / "n1"), index=index, batch="n1")
    kept = night1["text"][0]
    # In process: an indexed text is a duplicate of its batch's document; a new one is added once.
    ix = cd.Index(index)
    [a] = ix.check([kept])
    assert a["duplicate"] and a["batch"] == "n1" and a["duplicate_of"] == night1["id"][0], a
    new = "a page nobody indexed, about lighthouses and the keepers who lived in them"
    first, second = ix.add(["x1", "x2"], [new, new])
    assert first["added"] and not second["added"] and second["duplicate_of"] == "x1", (first, second)
    assert ix.check([new], ids=["q"])[0]["duplicate_of"] == "x1"
    assert ix.stats()["online_documents"] == 1
    assert ix.remove("x1") and not ix.remove("x1-never")
    # One user of an index's journal at a time: the server is refused while the Index is open.
    busy = subprocess.run([BINARY, "serve", "--index", index, "--listen", "127.0.0.1:0"],
                          capture_output=True, text=True, timeout=60)
    assert busy.returncode == 1 and "another server" in busy.stderr, busy.stderr
    del ix
    # Over HTTP: the server sees what the Index retained (the journal), with its token.
    (tmp_path / "token").write_text("tok\n")
    server = subprocess.Popen([BINARY, "serve", "--index", index, "--listen", "127.0.0.1:0",
                               "--token-file", str(tmp_path / "token")], stderr=subprocess.PIPE, text=True)
    try:
        url = server.stderr.readline().strip().rsplit(" on ", 1)[1]
        client = cd.Client(url, token="tok")
        assert client.check([new])[0]["duplicate"] is False  # x1 was removed
        assert client.add(["x3"], [new])[0]["added"]
        assert client.check([new])[0]["duplicate_of"] == "x3"
        assert client.remove("x3") and not client.remove("no-such")
        assert client.stats()["indexed_documents"] > 0
        with pytest.raises(cd.ConfigError, match="401"):
            cd.Client(url).stats()
    finally:
        server.terminate()
        assert server.wait(timeout=60) == 0


def test_index_answers_for_a_simhash_index(tmp_path):
    index = str(tmp_path / "index")
    files = sorted(Path(ROOT / "data-samples" / "synthetic").glob("*.parquet"))
    night1 = pl.read_parquet(files[0])
    cd.run(str(files[0]), str(tmp_path / "n1"), index=index, batch="n1", method="simhash")
    # The index's own method: an indexed text is found by its fingerprint, a new one added once.
    ix = cd.Index(index)
    [a] = ix.check([night1["text"][0]])
    assert a["duplicate"] and a["batch"] == "n1" and a["duplicate_of"] == night1["id"][0], a
    new = "a page nobody indexed, about tide pools, their crabs, snails and anemones at low water"
    first, second = ix.add(["s1", "s2"], [new, new])
    assert first["added"] and not second["added"] and second["duplicate_of"] == "s1", (first, second)


def test_index_answers_within_partitions(tmp_path):
    index = str(tmp_path / "index")
    text = "a page about harbour seals, the way they haul out on rocks and sandbanks at low tide"
    shard = tmp_path / "n1" / "s.parquet"
    shard.parent.mkdir()
    pl.DataFrame({"id": ["d0"], "text": [text], "lang": ["en"]}).write_parquet(shard)
    cd.run(str(shard), str(tmp_path / "out"), index=index, batch="n1", partition_by="lang")
    # An index built with --partition-by: each text names its value, and matches within it only.
    ix = cd.Index(index)
    assert ix.check([text], partitions=["en"])[0]["duplicate_of"] == "d0"
    assert ix.check([text], partitions=["de"])[0]["duplicate"] is False
    assert ix.add(["x1"], [text], partitions=[None])[0]["added"]
    assert ix.check([text], partitions=[None])[0]["duplicate_of"] == "x1"
    with pytest.raises(cd.ConfigError, match="partitioned by `lang`"):
        ix.check([text])
