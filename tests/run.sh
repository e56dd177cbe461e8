#!/usr/bin/env bash
# The project's test command: installs what the tests need, then runs them.
#   bash tests/run.sh [pytest arguments]
# Works from a clean clone on a fresh machine (Debian, Python >= 3.11, root or sudo for apt-get). Where the
# system Python is externally managed (PEP 668, Debian 12's python3) it installs into ./.venv, the same venv
# cluster.sh uses (scripts/python_env.sh). Prints the run's wall time at the end (on stderr).
# ODRADEK_TEST_WORKERS (default 2) sets how many pytest-xdist workers run the test files.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

# shellcheck source=../scripts/python_env.sh
source scripts/python_env.sh

# Integration tests run a real ZooKeeper (Debian's package, or a tarball named by ZOOKEEPER_HOME).
if [ ! -f /usr/share/java/zookeeper.jar ] && [ -z "${ZOOKEEPER_HOME:-}" ]; then
    apt_install zookeeper
fi

# Compatibility tests drive kcat (Debian's package: kcat 1.7.1 on librdkafka 2.0.2).
if ! command -v kcat >/dev/null 2>&1; then
    apt_install kcat
fi

# The web console's end-to-end tests (tests/console/, marker "browser") drive Debian's chromium through
# Playwright (no browser download: the machines have no internet).
if ! command -v chromium >/dev/null 2>&1; then
    apt_install chromium
fi

# The network-partition chaos tests put brokers in network namespaces (iproute2's ip; they skip without root).
if ! command -v ip >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    apt_install iproute2
fi

# The JVM tests (tests/jvm) build Java programs with Maven (Debian's package brings Java 17) against jars
# from Maven Central, resolved into the local Maven cache once (tests/jvm/build.sh; later runs are offline
# and cost nothing when nothing changed). Without them the jvm tests fail saying what is missing.
if ! command -v mvn >/dev/null 2>&1; then
    apt_install maven || echo "tests/run.sh: could not install Maven; the jvm tests will fail" >&2
fi
bash tests/jvm/build.sh || echo "tests/run.sh: the JVM dependencies are incomplete; the jvm tests will fail" >&2

choose_python

# The compiled record codec (protocol/records/codec_c) needs gcc and the Python headers.
if ! command -v gcc >/dev/null 2>&1 || ! "$PYTHON" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
    apt_install gcc python3-dev
fi

"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e '.[test]'
# The tests run the odradek-* commands as a user does: the ones just installed, first on PATH.
PATH="$("$PYTHON" -c 'import os, sys; print(os.path.dirname(sys.executable))'):$PATH"
export PATH

# The protocol package must stay sans-IO: no asyncio, sockets, kazoo or uvloop under protocol/.
if grep -rnE '^\s*(import|from)\s+(asyncio|socket|selectors|kazoo|uvloop)\b' protocol/; then
    echo "protocol/ must not import I/O libraries (see DESIGN.md)" >&2
    exit 1
fi

status=0
# A full run first runs the codec and client unit tests with the pure-Python record codec forced.
if [ $# -eq 0 ]; then
    ODRADEK_PURE_PYTHON=1 "$PYTHON" -m pytest -q -p no:cacheprovider tests/unit/protocol/records tests/unit/clients \
        || status=$?
fi

# Test files are spread over ODRADEK_TEST_WORKERS pytest-xdist workers (0 = one process): most of a
# test's time is waiting on broker processes, so two workers use 2 cores better than one. --dist loadfile
# keeps a file's tests in one worker, so module fixtures (shared clusters) are still shared; each worker
# has its own session ZooKeeper.
# --durations lists the slowest tests and fixtures, which is where to look when CI's wall time grows.
"$PYTHON" -m pytest -q -p no:cacheprovider -n "${ODRADEK_TEST_WORKERS:-2}" --dist loadfile --durations=25 "$@" \
    || status=$?
elapsed=$(( $(date +%s) - started ))
printf 'tests/run.sh: wall time %dm%02ds\n' $((elapsed / 60)) $((elapsed % 60)) >&2
exit $status
