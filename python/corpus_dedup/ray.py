"""Run a corpus-dedup job on a Ray cluster, stage by stage (`python -m corpus_dedup.ray`).

Submit it with the Ray Jobs CLI (the cluster must already run; nothing here starts one):

    ray job submit --address http://HEAD:8265 -- \
        python -m corpus_dedup.ray --work s3://bucket/work/2026-11-22 \
        -- --input 's3://bucket/crawl/*.parquet' --output s3://bucket/manifests/2026-11-22 --tasks 400

What it does:
1. `corpus-dedup plan` (here, on the driver) writes plan.json into the shared work directory and
   prints each stage's task count. Rerunning the driver on the same work directory keeps the plan
   when it describes the same work, so completed tasks are reused.
2. For each stage in order, one Ray task per stage task runs
   `corpus-dedup task STAGE --task I --tasks N --work WORK` on some node; the driver waits for the
   whole stage before starting the next. A task that fails (non-zero exit, killed process, lost
   node) is retried by Ray up to --retries times; a task that already completed is skipped by the
   binary itself (its completion marker exists), so retries and reruns are safe.
3. Prints one JSON line per stage and the summary at the end.

Needs on every node: this package (`pip install ./python`, whose `corpus-dedup` command runs
the tasks) or the binary at --binary, and access to the work directory (a shared filesystem
path, or object storage with AWS_* credentials in the environment or the job's runtime_env).
"""

import argparse
import json
import subprocess
import sys
import time


def run_task(binary, stage, index, count, work, threads):
    """One stage task as a subprocess; raises (so Ray retries) when it fails."""
    cmd = [binary, "task", stage, "--task", str(index), "--tasks", str(count), "--work", work]
    if threads:
        cmd += ["--threads", str(threads)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
        raise RuntimeError(f"{stage} task {index} failed ({how}): {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m corpus_dedup.ray", description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default="corpus-dedup",
                    help="the corpus-dedup command on every node (default: this package's)")
    ap.add_argument("--work", required=True, help="shared work directory (path or s3:// URL)")
    ap.add_argument("--address", default="auto", help="Ray address (default: the job's cluster)")
    ap.add_argument("--retries", type=int, default=3, help="retries per failed task")
    ap.add_argument("--cpus-per-task", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=0, help="threads per task (default: cpus-per-task)")
    ap.add_argument("plan_args", nargs=argparse.REMAINDER,
                    help="after --: the `corpus-dedup plan` flags (--input, --output, --tasks, ...)")
    args = ap.parse_args(argv)
    plan_args = args.plan_args[1:] if args.plan_args[:1] == ["--"] else args.plan_args
    threads = args.threads or max(1, int(args.cpus_per_task))

    started = time.time()
    plan = subprocess.run([args.binary, "plan", "--quiet", "--work", args.work, *plan_args],
                          capture_output=True, text=True)
    if plan.returncode != 0:
        sys.exit(f"corpus-dedup plan failed: {plan.stderr.strip()}")
    counts = json.loads(plan.stdout)
    print(json.dumps({"plan": counts}), flush=True)

    import ray  # only the driver needs Ray, not the package

    ray.init(address=args.address)
    task = ray.remote(max_retries=args.retries, retry_exceptions=True,
                      num_cpus=args.cpus_per_task)(run_task)
    for stage in counts["stages"]:
        n = counts["tasks"][stage]
        t0 = time.time()
        refs = [task.remote(args.binary, stage, i, n, args.work, threads) for i in range(n)]
        reports = ray.get(refs)
        print(json.dumps({
            "stage": stage,
            "tasks": n,
            "already_complete": sum(1 for r in reports if r.get("already_complete")),
            "seconds": round(time.time() - t0, 3),
            "max_task_peak_rss_mib": max((r.get("peak_rss_mib", 0) for r in reports), default=0),
        }), flush=True)
    print(json.dumps({"done": True, "seconds": round(time.time() - started, 3)}), flush=True)


if __name__ == "__main__":
    main()
