# corpus-dedup: the two commands users need are `make dedup INPUT=...` and `make test`.
# One cargo profile (release) serves build, tests and benchmarks, so polars compiles once.

CARGO_TARGET_DIR ?= $(HOME)/.cache/corpus-dedup-target
export CARGO_TARGET_DIR
CARGO ?= cargo
BIN := $(CARGO_TARGET_DIR)/release/corpus-dedup
PY_VENV ?= $(HOME)/.cache/corpus-dedup-py-venv
export CORPUS_DEDUP_PY_VENV := $(PY_VENV)
GEN := $(CARGO_TARGET_DIR)/release/gen-corpus

INPUT ?= data-samples/*.parquet
OUTPUT ?= out
ARGS ?=

.PHONY: build dedup test samples bench bench-ab bench-same bench-ratios bench-peers bench-kernels bench-scale bench-work-bytes bench-index bench-nights bench-recrawl bench-scripts bench-python bench-sketch bench-sweep bench-audit bench-signals bench-decontam bench-paragraphs bench-substrings bench-jsonl bench-export bench-serve bench-serve-recrawl bench-serve-retained bench-index-soak soak s3-demo clean-out

build:
	$(CARGO) build --release --locked --bins

## make dedup INPUT='dir/*.parquet' [OUTPUT=out] [ARGS='--threshold 0.85']
## Several globs: INPUT='a/*.parquet b/*.parquet'. s3:// globs and outputs use the AWS_* environment.
dedup: build
	$(BIN) run $(foreach i,$(INPUT),--input '$(i)') --output '$(OUTPUT)' $(ARGS)

## Rust tests, then the Python package's (python/build.sh builds and installs its wheel first:
## the Ray test runs its module)
test:
	bash python/build.sh
	$(CARGO) test --release --locked --features test-hooks
	$(PY_VENV)/bin/python -m pytest -q python/tests

## Regenerates data-samples/synthetic/ deterministically (English, Chinese, mixed shards; the tests'
## data). The real sample, data-samples/rust-docs.*, is made by data-samples/rust-docs.py.
samples: build
	rm -f data-samples/synthetic/*.parquet
	$(GEN) --out data-samples/synthetic --docs 240 --lang en --seed 11 --name en
	$(GEN) --out data-samples/synthetic --docs 200 --lang zh --seed 12 --name zh
	$(GEN) --out data-samples/synthetic --docs 160 --lang mixed --seed 13 --name mixed

## Speed, memory and quality on the development corpus (../shared/corpus) with --threads 1.
bench: build
	bash benches/run.sh

## End to end over the signature-path kernels and two threads over one, alternated rounds, medians:
## Old and new binary alternated (per-stage medians, manifests compared):
## make bench-ab OLD=old-binary NEW=new-binary [CORPUS=dir] [ROUNDS=5] [THREADS=1] [CORES=0]
##              [ARGS='flags for both'] [NEW_ARGS='flags only the new binary takes']
bench-ab:
	bash benches/ab.sh

## Byte-identical manifests of two binaries for every option family: make bench-same OLD=... NEW=...
bench-same:
	bash benches/same-manifests.sh

## make bench-ratios [CORPUS=dir] [ROUNDS=5] [GAOYA=1: gaoya-words on the same core in every round]
bench-ratios: build
	$(CARGO) build --release --locked --example kernels
	bash benches/ratios.sh

## corpus-dedup beside datasketch, rensa, gaoya and datatrove (PyPI) on the same shards, one core each:
## make bench-peers [CORPUS=dir] [PEERS='gaoya-words rensa' (default: all)]
bench-peers: build
	bash benches/peers/run.sh

## Throughput of each hot step (Parquet decode, normalise, tokenise, shingle, MinHash, ...), 1 thread.
bench-kernels:
	RAYON_NUM_THREADS=1 POLARS_MAX_THREADS=1 taskset -c 0 $(CARGO) run --release --locked --example kernels -- '$(or $(KERNEL_INPUT),../shared/corpus/dev-small/shard-*.parquet)'

## The retained index at scale: make bench-index [NIGHTS=10 NIGHT_DOCS=1000000 NEW_DOCS=1000000 KEYS=short METHOD=minhash ARGS=...]
## [DISTINCT=NIGHTS: generated corpora, reused in turn] [REPEAT=2: alternations after the warm-up]
bench-index: build
	DISTINCT='$(DISTINCT)' REPEAT='$(REPEAT)' NIGHTS=$(or $(NIGHTS),10) NIGHT_DOCS=$(or $(NIGHT_DOCS),1000000) NEW_DOCS=$(or $(NEW_DOCS),1000000) \
	  KEYS=$(or $(KEYS),short) METHOD=$(or $(METHOD),minhash) ARGS='$(ARGS)' bash benches/index.sh

## Quality of the classic and oph sketches over seeds 1-SEEDS: make bench-sketch [CORPORA='dir ...'] [SEEDS=15]
bench-sketch: build
	CORPORA='$(or $(CORPORA),../shared/corpus/dev-small)' SEEDS=$(or $(SEEDS),15) bash benches/sketch.sh

## One run --sweep against separate runs at each threshold, and its cost: make bench-sweep [CORPORA='dev-small multi rust-docs DIR'] [ROUNDS=3]
bench-sweep: build
	ROUNDS=$(or $(ROUNDS),3) bash benches/sweep.sh $(or $(CORPORA),dev-small multi rust-docs)

## Audit against exact truth: labels from the truth scored beside the true precision: make bench-audit [PAIRS=200]
bench-audit: build
	bash benches/audit/run.sh $(or $(PAIRS),200)

## The development corpus as 4 nights through one index, scored: make bench-nights [WINDOW=4] [ARGS='--index-keys short']
bench-nights: build
	WINDOW=$(or $(WINDOW),4) ARGS='$(ARGS)' bash benches/nights/run.sh

## A nightly re-crawl through one index, both --cluster rules, scored: make bench-recrawl [ARGS=...] [NIGHTS=4] [WINDOW=2]
bench-recrawl: build
	NIGHTS=$(or $(NIGHTS),4) WINDOW=$(or $(WINDOW),2) ARGS='$(ARGS)' bash benches/recrawl/run.sh

## The Python package's minhash() against the Rust kernels, one core, alternated:
## make bench-python [KERNEL_INPUT=glob] [ROUNDS=5]
bench-python:
	bash python/build.sh
	$(CARGO) build --release --locked --example kernels
	taskset -c 0 env RAYON_NUM_THREADS=1 POLARS_MAX_THREADS=1 $(PY_VENV)/bin/python benches/python/udf.py \
	  $(CARGO_TARGET_DIR)/release/examples/kernels '$(or $(KERNEL_INPUT),../shared/corpus/dev-small/shard-*.parquet)' $(or $(ROUNDS),5)

## Speed per script (same-size corpora from ../shared/corpus/multi, one thread): make bench-scripts [LANGS='en th km my'] [MB=20] [ROUNDS=3]
bench-scripts: build
	LANGS='$(or $(LANGS),en th km my)' MB=$(or $(MB),20) ROUNDS=$(or $(ROUNDS),3) bash benches/scripts/run.sh $(BIN)

## --partition-by against one run per value (dev-small, multi) and --across against its ideal on
## exact truth (dev-small): make bench-signals
bench-signals: build
	BIN=$(BIN) bash benches/signals/run.sh

## Decontamination: the planted set, and 100k reference items against CORPUS (cold and nightly):
## make bench-decontam [CORPUS=/tmp/dev-large] [ROUNDS=12] [THREADS=2] [CORES=0,1]
bench-decontam: build
	BIN=$(BIN) GEN=$(GEN) bash benches/decontam/run.sh

## make bench-paragraphs [CORPUS=/tmp/dev-large] [ROUNDS=7] [THREADS=2] [CORES=0,1]
bench-paragraphs: build
	BIN=$(BIN) bash benches/paragraphs/run.sh

## Substring dedup: exactness against an independent suffix array, the suffix-array tool of Lee et
## al. on the same kept text (DTD=path of its dedup_dataset binary; skipped without), and the
## cost of --substrings on CORPUS: make bench-substrings [DTD=...] [CORPUS=/tmp/dev-large] [ROUNDS=7]
## [TOOL_ROUNDS=3] [EXACT=0: skip the exactness checks]
bench-substrings: build
	BIN=$(BIN) DTD='$(DTD)' CORPUS='$(or $(CORPUS),/tmp/dev-large)' ROUNDS=$(or $(ROUNDS),7) \
	  TOOL_ROUNDS='$(TOOL_ROUNDS)' EXACT='$(EXACT)' bash benches/substrings/run.sh

## JSON Lines (.jsonl, .jsonl.zst) against Parquet on one core, order rotated, and the peak RSS
## of one ~5 GB .jsonl.zst: make bench-jsonl [CORPUS=/tmp/dev-large] [ROUNDS=6] [BIG_COPIES=11]
bench-jsonl: build
	BIN=$(BIN) CORPUS='$(or $(CORPUS),/tmp/dev-large)' ROUNDS=$(or $(ROUNDS),6) BIG_COPIES=$(or $(BIG_COPIES),11) bash benches/jsonl/run.sh

## serve against the nightly run, latency at RATE adds/s and the most adds/s: make bench-serve [CORPUS=/tmp/dev-large] [RATE=280] [CLIENTS=4]
bench-serve: build
	BIN=$(BIN) CORPUS='$(or $(CORPUS),/tmp/dev-large)' RATE=$(or $(RATE),280) CLIENTS=$(or $(CLIENTS),4) bash benches/serve/run.sh

## `serve` on a real re-crawl (4 releases of 3 projects' docs; nights 1-3 indexed, night 4 served): make bench-serve-recrawl
bench-serve-recrawl: build
	BIN=$(BIN) RATE=$(or $(RATE),280) bash benches/serve/recrawl.sh

## `serve` over N generated retained documents: make bench-serve-retained N=50000000 [BATCHES=5] [METHOD=simhash] [ARGS=...] [RATE=280]
bench-serve-retained: build
	BIN=$(BIN) N=$(N) BATCHES=$(or $(BATCHES),1) METHOD=$(or $(METHOD),minhash) ARGS='$(ARGS)' RATE=$(or $(RATE),280) CLIENTS=$(or $(CLIENTS),4) bash benches/serve/retained.sh

## `index export` of NIGHTS x NIGHT_DOCS indexed documents: make bench-export [NIGHTS=10 NIGHT_DOCS=1000000]
bench-export: build
	NIGHTS=$(or $(NIGHTS),10) NIGHT_DOCS=$(or $(NIGHT_DOCS),1000000) bash benches/signals/export.sh

## The index over a re-crawl stream, bytes per live document night by night:
## make bench-index-soak [NIGHTS=24] [NEW=800] [RECRAWL=800] [WINDOW=2] [ARGS=...]
bench-index-soak: build
	NIGHTS=$(or $(NIGHTS),24) NEW=$(or $(NEW),800) RECRAWL=$(or $(RECRAWL),800) WINDOW=$(or $(WINDOW),2) ARGS='$(ARGS)' bash benches/soak-index/run.sh

## Work-directory bytes per document by stage, --work-keys stored and remade: make bench-work-bytes [CORPUS='dir/*.parquet'] [ARGS=...]
bench-work-bytes: build
	bash benches/work-bytes.sh

## Growth with N generated short documents, task path and local run, scored against planted truth:
## make bench-scale N=1000000 [ARGS='--work-keys remade'] [KEEP=1]. Per stage on a corpus of yours
## (task path only): make bench-scale INPUT='dir/*.parquet' NAME=1M
bench-scale: build
	$(if $(N),N='$(N)' ARGS='$(ARGS)' KEEP='$(KEEP)' bash benches/bench-scale.sh,bash benches/scale.sh '$(INPUT)' $(or $(NAME),scale))

## Kill -9 three times during a run, resume, compare with an uninterrupted run: make soak INPUT='dir/*.parquet'
soak: build
	bash benches/soak.sh '$(INPUT)'

## s3:// input and output against a local S3-compatible server (s3s-fs) on loopback.
s3-demo: build
	bash jobs/s3-demo.sh

clean-out:
	rm -rf out
