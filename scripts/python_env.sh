# Sourced by cluster.sh and tests/run.sh (from the repository root): the one place that picks the Python
# that runs Odradek, so both commands share one ./.venv.
#   choose_python   sets PYTHON: ./.venv/bin/python if it exists; else $PYTHON (default python3) unless
#                   it is externally managed (PEP 668, e.g. Debian 12's python3), in which case ./.venv
#                   is created from it. Installs Debian's python3/-venv/-pip when they are missing.
#   apt_install PKG...   apt-get install, through sudo when not root.

sudo_if_needed() {
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then sudo "$@"; else "$@"; fi
}

apt_install() {
    sudo_if_needed apt-get update -qq
    sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

choose_python() {
    PYTHON=${PYTHON:-python3}
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; return; fi
    if ! command -v "$PYTHON" >/dev/null 2>&1; then apt_install python3 python3-pip python3-venv; fi
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        echo "Odradek needs Python >= 3.11; $PYTHON is $("$PYTHON" -V 2>&1). Set PYTHON to a newer one." >&2
        exit 1
    fi
    if "$PYTHON" -c 'import os, sys, sysconfig
managed = os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
sys.exit(0 if managed and sys.prefix == sys.base_prefix else 1)'; then
        echo "$PYTHON is externally managed (PEP 668): installing into ./.venv" >&2
        "$PYTHON" -m venv .venv 2>/dev/null || { rm -rf .venv; apt_install python3-venv && "$PYTHON" -m venv .venv; }
        PYTHON=.venv/bin/python
    elif ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
        apt_install python3-pip
    fi
}
