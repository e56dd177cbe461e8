#!/usr/bin/env bash
# The project's test command: installs what the tests need, then runs them.
#   bash tests/run.sh [pytest arguments]
# Works from a clean clone on a fresh machine (Debian, Python >= 3.11, root or sudo for apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e '.[test]'

# The protocol package must stay sans-IO: no asyncio, sockets, kazoo or uvloop under protocol/.
if grep -rnE '^\s*(import|from)\s+(asyncio|socket|selectors|kazoo|uvloop)\b' protocol/; then
    echo "protocol/ must not import I/O libraries (see DESIGN.md)" >&2
    exit 1
fi

exec "$PYTHON" -m pytest -q -p no:cacheprovider "$@"
