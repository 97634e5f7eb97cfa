# Sourced by the other scripts: puts Python 3.12+ and uv on PATH on a fresh machine.
# Nothing is downloaded but packages from PyPI (uv itself); Python comes from the machine.

export UV_PYTHON_DOWNLOADS=never
export UV_NO_PROGRESS=1
# Verify PyPI with the machine's certificate store (it may hold a proxy's authority).
export UV_SYSTEM_CERTS=1
if [ -z "${SSL_CERT_FILE:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    export SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
fi

psych_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# A command counts only if it runs: pyenv's shims answer `command -v` for versions that are
# installed but not selected, and then fail when called.
runs() { "$@" >/dev/null 2>&1; }

# Python 3.12 and 3.13: from PATH, or from pyenv's versions folder when the shims hide them.
pyenv_versions="${PYENV_ROOT:-$HOME/.pyenv}/versions"
if command -v pyenv >/dev/null 2>&1; then
    pyenv_versions="$(pyenv root)/versions"
fi
for minor in 3.13 3.12; do
    if ! runs "python$minor" -c "import sys"; then
        found="$(ls -d "$pyenv_versions/$minor".*/bin 2>/dev/null | sort -V | tail -n 1)"
        [ -n "$found" ] && export PATH="$found:$PATH"
    fi
done
if ! runs python3.12 -c "import sys"; then
    echo "Psych needs Python 3.12: install it (or pyenv install 3.12) and run this again." >&2
    exit 2
fi

# uv: from PATH, or installed from PyPI into a tool environment inside the checkout.
if ! runs uv --version; then
    tools="$psych_root/.cache/tools"
    if ! runs "$tools/bin/uv" --version; then
        echo "Installing uv from PyPI into $tools ..." >&2
        rm -rf "$tools"
        python3.12 -m venv "$tools"
        "$tools/bin/pip" install --quiet --disable-pip-version-check uv
    fi
    export PATH="$tools/bin:$PATH"
fi
