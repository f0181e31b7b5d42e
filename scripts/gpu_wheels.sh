#!/usr/bin/env bash
# Fill a folder of wheels for scripts/verify_gpu_check.sh: this project built as a wheel, plus every
# dependency of it, pytest and pip, as binary wheels for the GPU machine's Python and platform.
# Run it where PyPI is reachable; carry the folder to the machine (which needs no network).
#
#   scripts/gpu_wheels.sh [-d DIR] [--python-version X.Y]... [--platform TAG]... [--python EXE]
#
#   -d DIR             the folder (default: wheels/, git-ignored)
#   --python-version   the GPU machine's Python, repeatable (default: 3.10 3.11 3.12, so one folder
#                      serves whichever of them the machine has: about 14 MB). 3.13 works where the
#                      index has pyyaml-ft (libcst needs it there; the package index here lacks it)
#   --platform         a wheel platform tag, repeatable (default: manylinux_2_28_x86_64, which pip
#                      also matches against older manylinux tags; use manylinux_2_28_aarch64 on Arm)
#   --python EXE       the interpreter whose pip builds and downloads (default: python3)
#
# What it runs, per Python version (the `pip download` the check's header refers to):
#   EXE -m pip wheel --no-deps -w DIR .
#   EXE -m pip download --only-binary=:all: --python-version X.Y --platform TAG -d DIR \
#       DIR/torch_migrate-*.whl pytest pip
# A version already downloaded for the same requirements is skipped (a stamp file in DIR), so a
# rerun only rebuilds this project's wheel, without touching the network.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/wheels
py=python3
versions=()
platforms=()
while [ $# -gt 0 ]; do
  case $1 in
    -d) dir=$2; shift 2 ;;
    --python-version) versions+=("$2"); shift 2 ;;
    --platform) platforms+=("$2"); shift 2 ;;
    --python) py=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_wheels.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#versions[@]} -gt 0 ] || versions=(3.10 3.11 3.12)
[ ${#platforms[@]} -gt 0 ] || platforms=(manylinux_2_28_x86_64)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
export PIP_DISABLE_PIP_VERSION_CHECK=1

# Build from a copy of the sources, so the build never writes into the working tree.
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
for item in codemods setup.cfg setup.py pyproject.toml README.md MANIFEST.in LICENSE; do
  [ -e "$root/$item" ] && cp -r "$root/$item" "$src/"
done
find "$src" -name __pycache__ -prune -exec rm -rf {} +
rm -f "$dir"/torch_migrate-*.whl
if "$py" -c "import setuptools" 2>/dev/null; then
  isolation=--no-build-isolation  # no network needed for setuptools
else
  isolation=
fi
"$py" -m pip wheel --quiet --no-deps $isolation -w "$dir" "$src"
project=$(ls "$dir"/torch_migrate-*.whl)
echo "built $(basename "$project")"

# The stamp names what was downloaded: the project's declared requirements, the version, the platforms.
requires=$("$py" - "$project" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    lines = wheel.read(name).decode().splitlines()
print("\n".join(sorted(line for line in lines if line.startswith("Requires-Dist:"))))
EOF
)
platform_args=()
for tag in "${platforms[@]}"; do platform_args+=(--platform "$tag"); done
for version in "${versions[@]}"; do
  key=$(printf '%s\n%s\n%s\n' "$requires" "$version" "${platforms[*]}" | sha256sum | cut -c1-16)
  stamp=$dir/.downloaded-py$version-$key
  if [ -f "$stamp" ]; then
    echo "python $version: dependencies already downloaded ($(basename "$stamp"))"
    continue
  fi
  download=("$py" -m pip download --quiet --only-binary=:all: --python-version "$version" "${platform_args[@]}" -d "$dir")
  "${download[@]}" "$project" pytest pip
  # pip evaluates environment markers (`tomli; python_version < "3.11"`) for the Python running it,
  # not for --python-version: add what the target's markers ask for, until nothing is missing.
  for round in 1 2 3 4 5; do
    missing=$("$py" - "$dir" "$version" <<'PYEOF'
import re, sys, zipfile
from pathlib import Path
try:
    from packaging.markers import default_environment
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.markers import default_environment
    from pip._vendor.packaging.requirements import Requirement

folder, version = Path(sys.argv[1]), sys.argv[2]
minor = int(version.split(".")[1])
env = dict(default_environment(), python_version=version, python_full_version=version + ".0",
           implementation_name="cpython", platform_python_implementation="CPython", sys_platform="linux",
           platform_system="Linux", os_name="posix", extra="")


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def fits(wheel):  # a wheel this Python can install: py3, cp3<minor>, or abi3 for an older cp3
    python_tag, abi = wheel.name[:-4].split("-")[-3:-1]
    for tag in python_tag.split("."):
        if tag in ("py3", f"py3{minor}", f"cp3{minor}"):
            return True
        if "abi3" in abi and tag.startswith("cp3") and int(tag[3:]) <= minor:
            return True
    return False


wheels = [w for w in folder.glob("*.whl") if fits(w)]
have = {canonical(w.name.split("-")[0]) for w in wheels}
wanted = [Requirement("torch-migrate"), Requirement("pytest"), Requirement("pip")]
for wheel in wheels:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode().splitlines()
    wanted += [Requirement(line.split(":", 1)[1].strip()) for line in lines if line.startswith("Requires-Dist:")]
missing = {
    canonical(r.name): r
    for r in wanted
    if (r.marker is None or r.marker.evaluate(env)) and canonical(r.name) not in have
}
print(" ".join(sorted(f"{r.name}{r.specifier}" for r in missing.values())))
PYEOF
    )
    [ -z "$missing" ] && break
    echo "python $version: adding $missing"
    # shellcheck disable=SC2086  # one word per requirement
    "${download[@]}" $missing
  done
  [ -z "$missing" ] || { echo "python $version: still missing $missing" >&2; exit 1; }
  touch "$stamp"
  echo "python $version: dependencies downloaded"
done
echo "wheels in $dir ($(ls "$dir"/*.whl | wc -l) files, $(du -sh "$dir" | cut -f1))"
