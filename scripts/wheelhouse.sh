#!/usr/bin/env bash
# Usage: scripts/wheelhouse.sh DIR [PYTHON]
#
# Fills DIR with a wheel of every Psych distribution in this checkout and the third-party
# wheels they need (every extra, and what the `psych new` templates install), at the versions
# uv.lock pins, for PYTHON (default python3.12) on this platform. Then
#
#     pip install --no-index --find-links DIR "psych-runtime[sqlite]" psych-cli
#
# installs from DIR alone. --no-index is what makes it safe: other authors publish
# distributions under some of our names (psych-runtime on PyPI is another project), and a pip
# or uv that may ask an index can pick one of those instead of ours.
#
# The third-party wheels are fetched by pip from the indexes this machine's pip is configured
# with, and checked against the hashes in uv.lock.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: scripts/wheelhouse.sh DIR [PYTHON]   (PYTHON: the interpreter the wheels are for; python3.12 by default)" >&2
    exit 2
fi
source "$(dirname "$0")/bootstrap.sh"
python="${2:-python3.12}"
if ! runs "$python" -c "import sys; assert sys.version_info >= (3, 12)"; then
    echo "$python is not a Python 3.12 or newer: pass the interpreter the wheels are for" >&2
    exit 2
fi
mkdir -p "$1"
wheelhouse="$(cd "$1" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$psych_root"
# The distributions under packages/, one by one: the workspace's apps (apps/*, the playground)
# are examples run from this checkout, never installed from a wheelhouse.
for project in packages/*/; do
    uv build --quiet --wheel --out-dir "$wheelhouse" "$project"
done

uv export --quiet --frozen --all-packages --all-extras --no-dev --group template-fastapi \
    --no-emit-workspace --output-file "$work/requirements.txt"
# pip from the interpreter's own ensurepip, in an environment of its own: the wheels it picks
# are the ones that interpreter can install.
"$python" -m venv "$work/pip"
"$work/pip/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: --require-hashes --dest "$wheelhouse" -r "$work/requirements.txt"

echo "Wheelhouse ready: $wheelhouse"
echo "Install from it alone (never from an index):"
echo "  export PSYCH_WHEELHOUSE=$wheelhouse"
echo "  pip install --no-index --find-links \"\$PSYCH_WHEELHOUSE\" \"psych-runtime[sqlite]\" psych-cli"
