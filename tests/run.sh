#!/usr/bin/env bash
# The project's test command: installs what the tests need, then runs them.
#   bash tests/run.sh [pytest arguments]
# Works from a clean clone on a fresh machine (Debian, Python >= 3.11, root or sudo for apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}

# Integration tests run a real ZooKeeper (Debian's package, or a tarball named by ZOOKEEPER_HOME).
if [ ! -f /usr/share/java/zookeeper.jar ] && [ -z "${ZOOKEEPER_HOME:-}" ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper
fi

# Compatibility tests drive kcat (Debian's package: kcat 1.7.1 on librdkafka 2.0.2, the version COMPAT.md studied).
if ! command -v kcat >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat
fi

"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e '.[test]'

# The protocol package must stay sans-IO: no asyncio, sockets, kazoo or uvloop under protocol/.
if grep -rnE '^\s*(import|from)\s+(asyncio|socket|selectors|kazoo|uvloop)\b' protocol/; then
    echo "protocol/ must not import I/O libraries (see DESIGN.md)" >&2
    exit 1
fi

exec "$PYTHON" -m pytest -q -p no:cacheprovider "$@"
