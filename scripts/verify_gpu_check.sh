#!/usr/bin/env bash
# The GPU check: torch-migrate on a machine with CUDA torch, in one call of under 6 minutes.
#
# Such a machine has a Python (3.10 or later) with CUDA torch, but neither libcst nor this project
# and no network. So the project comes in a folder of wheels carried along with the repository:
#
#   # where PyPI is reachable; X.Y = the GPU machine's Python (default: 3.10 3.11 3.12)
#   scripts/gpu_wheels.sh -d wheels --python-version X.Y [--platform manylinux_2_28_x86_64]
#   # which runs: pip wheel --no-deps -w wheels .
#   #             pip download --only-binary=:all: --python-version X.Y \
#   #                 --platform manylinux_2_28_x86_64 -d wheels wheels/torch_migrate-*.whl pytest pip
#
#   # on the GPU machine, from the repository root (wheels/ is git-ignored: carry it explicitly)
#   scripts/verify_gpu_check.sh [--python python3] [--wheels wheels] [--device cuda] [--summary FILE]
#
# It makes a fresh venv with --system-site-packages (the machine's torch is used, never reinstalled),
# installs torch-migrate and pytest into it with `pip install --no-index --find-links WHEELS`, then,
# with that venv's python:
#   1. verify --device cuda on the example projects (fixtures/projects/: loss_warnings,
#      pinned_warning, legacy_classifier, torch1_era), each with its expected outcome (pinned_warning:
#      exit 1, one regression caused by TM001 on legacy.py; the others exit 0), and loss_warnings
#      once more with --device cpu (GPU hidden);
#   2. the DDP fixture (fixtures/projects/ddp_train), migrated (TM103), under torchrun with one
#      process per GPU: NCCL, each rank's model on its own GPU, the data split between ranks, a
#      checkpoint from rank 0 only. With one GPU, torchrun runs one process and no process group is
#      made (the summary says so). A failed torchrun is tried once more, and both tries are reported;
#   3. fixtures/device_script/legacy_gpu.py migrated (TM101/TM102) and run on a checkpoint saved on
#      the GPU: its loss is computed on cuda, CUDA memory is used, and its result matches the CPU
#      reference script (the legacy original fails on either device).
# Each check's exit code and key lines go to ONE summary file (JSON: "ok" per check, "passed" for
# all); the script exits 0 only if every check passed, else 1. About 2 minutes; every step has a
# time limit and the whole run stops short of 6 minutes.
#
# --device cpu runs the same checks with the GPU hidden (torchrun: 2 processes, gloo; the migrated
# script on cpu): that is how tests/test_gpu_check_script.py tests the install-from-wheels path.
#
# Options (or the environment variable in brackets):
#   --python EXE     the machine's interpreter, the one with torch [PYTHON] (default: python3)
#   --wheels DIR     the wheels folder [WHEELS] (default: wheels/ in the repository)
#   --device D       cuda or cpu [DEVICE] (default: cuda)
#   --summary FILE   [SUMMARY] (default: $OUT/gpu-check-summary.json if $OUT is set, else in a new
#                    temporary folder; its path is printed last)
#   --projects A,B   example projects to verify [PROJECTS] (default: the four above, where present)
#   --nproc N        torchrun processes [NPROC] (default: the number of GPUs; 2 with --device cpu)
#   --venv DIR       where to make the venv (default: inside the temporary work folder)
#   --keep           keep the work folder (migrated copies, reports, torchrun outputs)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
wheels=${WHEELS:-$root/wheels}
device=${DEVICE:-cuda}
summary=${SUMMARY:-}
extra=()
[ -n "${PROJECTS:-}" ] && extra+=(--projects "$PROJECTS")
[ -n "${NPROC:-}" ] && extra+=(--nproc "$NPROC")
while [ $# -gt 0 ]; do
  case $1 in
    --python) py=$2; shift 2 ;;
    --wheels) wheels=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --summary) summary=$2; shift 2 ;;
    --projects|--nproc|--venv) extra+=("$1" "$2"); shift 2 ;;
    --keep) extra+=(--keep); shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "verify_gpu_check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$summary" ]; then
  if [ -n "${OUT:-}" ]; then summary=$OUT/gpu-check-summary.json; else summary=$(mktemp -d)/gpu-check-summary.json; fi
fi
absolute() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
wheels=$(absolute "$wheels")
summary=$(absolute "$summary")
case $py in */*) py=$(absolute "$py") ;; esac
command -v "$py" >/dev/null 2>&1 || { echo "verify_gpu_check.sh: no python '$py'" >&2; exit 2; }
# Standard library only; run from / so that nothing of the repository is importable by accident.
cd / && exec timeout 355 "$py" "$root/scripts/gpu_check.py" --python "$py" --wheels "$wheels" \
  --device "$device" --summary "$summary" ${extra[@]+"${extra[@]}"}
