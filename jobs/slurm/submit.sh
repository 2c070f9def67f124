#!/usr/bin/env bash
# Plans a corpus-dedup run and submits every stage as a Slurm job array (stage.sbatch), each
# stage starting only after every task of the previous one succeeded (afterok). Run it on a login
# node that sees the work directory:
#
#   jobs/slurm/submit.sh --binary /opt/corpus-dedup --work /shared/work/2026-11-22 \
#       --sbatch 'all=--partition=cpu --account=data' --sbatch 'cluster=--mem=32G' \
#       -- --input '/shared/crawl/2026-11-22/*.parquet' --output /shared/dedup/2026-11-22 --tasks 400
#
# Flags after -- go to `corpus-dedup plan` (input, output, method settings, --tasks,
# --bucket-ranges, --config jobs/nightly.toml). --sbatch STAGE=FLAGS (or all=FLAGS) adds sbatch
# flags for one stage or all of them. Prints one JSON line per submitted stage. If a stage fails,
# the later stages are cancelled (--kill-on-invalid-dep); running the same command again reuses
# the plan, and every task that already completed returns at once.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
binary= work= all_flags=
declare -A stage_flags=()
while [ $# -gt 0 ]; do
  case $1 in
    --binary) binary=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --sbatch)
      key=${2%%=*}; val=${2#*=}
      if [ "$key" = all ]; then all_flags="$all_flags $val"; else stage_flags[$key]="${stage_flags[$key]:-} $val"; fi
      shift 2 ;;
    --) shift; break ;;
    *) echo "submit.sh: unknown flag $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ -n "$binary" ] && [ -n "$work" ] || { echo "submit.sh: --binary and --work are required" >&2; exit 2; }
counts=$("$binary" plan --quiet --work "$work" "$@")
read -r -a stages <<< "$(python3 -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])["stages"]))' "$counts")"
dep=
for stage in "${stages[@]}"; do
  n=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["tasks"][sys.argv[2]])' "$counts" "$stage")
  # shellcheck disable=SC2086 # the extra flags are meant to split into words
  id=$(sbatch --parsable --array="0-$((n - 1))" --job-name="corpus-dedup-$stage" \
    ${dep:+--dependency=afterok:$dep --kill-on-invalid-dep=yes} \
    --export="ALL,CD_BINARY=$binary,CD_WORK=$work,CD_STAGE=$stage,CD_TASKS=$n" \
    $all_flags ${stage_flags[$stage]:-} "$here/stage.sbatch")
  id=${id%%;*}
  echo "{\"stage\":\"$stage\",\"tasks\":$n,\"job\":\"$id\"}"
  dep=$id
done
