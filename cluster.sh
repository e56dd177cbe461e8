#!/usr/bin/env bash
# Start, stop or inspect a local Odradek cluster (ZooKeeper + brokers on 127.0.0.1) from a fresh clone.
#   bash cluster.sh start  [odradek-cluster start flags]   # default: --brokers 3 --data-dir ./.odradek-cluster
#   bash cluster.sh status [flags]
#   bash cluster.sh stop   [flags]
# `start` first installs what is missing: Debian's zookeeper, gcc and python3-dev packages (apt-get, through
# sudo when not root) and this checkout with pip (`pip install -e .`, into ./.venv when the system Python is externally managed).
# Environment: PYTHON (default python3), ODRADEK_BROKERS (3), ODRADEK_DATA_DIR (./.odradek-cluster).
set -euo pipefail
cd "$(dirname "$0")"

COMMAND=${1:-start}
if [ $# -gt 0 ]; then shift; fi
BROKERS=${ODRADEK_BROKERS:-3}
DATA_DIR=${ODRADEK_DATA_DIR:-./.odradek-cluster}
PYTHON=${PYTHON:-python3}
export ODRADEK_CLUSTER_COMMAND="bash cluster.sh"  # how odradek-cluster's hints tell you to stop the cluster

# shellcheck source=scripts/python_env.sh
source scripts/python_env.sh

install_zookeeper() {
    if [ -f /usr/share/java/zookeeper.jar ] || [ -n "${ZOOKEEPER_HOME:-}" ]; then return; fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "ZooKeeper is missing and this is not a Debian-like system: install Apache ZooKeeper and set ZOOKEEPER_HOME" >&2
        exit 1
    fi
    echo "Installing Debian's zookeeper package ..." >&2
    apt_install zookeeper
}

# gcc and the Python headers build the compiled record codec (without them the pure-Python one runs, slower).
install_build_tools() {
    if command -v gcc >/dev/null 2>&1 && "$PYTHON" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then return; fi
    if ! command -v apt-get >/dev/null 2>&1; then return; fi
    echo "Installing gcc and python3-dev (for the compiled record codec) ..." >&2
    apt_install gcc python3-dev
}

# Installs this checkout unless the chosen Python already imports Odradek from here.
install_odradek() {
    local here
    here=$(pwd -P)
    if [ "$("$PYTHON" -c 'import os, odradek.tools.cluster as m; print(os.path.realpath(m.__file__))' 2>/dev/null)" \
        = "$here/tools/cluster.py" ]; then return; fi
    echo "Installing Odradek (pip install -e .) ..." >&2
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e .
}

case "$COMMAND" in
    start)
        install_zookeeper
        choose_python
        install_build_tools
        install_odradek
        exec "$PYTHON" -m odradek.tools.cluster start --brokers "$BROKERS" --data-dir "$DATA_DIR" "$@"
        ;;
    stop|status)
        if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; fi
        exec "$PYTHON" -m odradek.tools.cluster "$COMMAND" --data-dir "$DATA_DIR" "$@"
        ;;
    *)
        echo "Usage: bash cluster.sh start|stop|status [odradek-cluster flags]" >&2
        exit 1
        ;;
esac
