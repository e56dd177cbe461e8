#!/usr/bin/env bash
# Resolves the test-time JVM dependencies declared in tests/jvm/pom.xml into the local Maven cache and builds
# the Java programs the tests drive. Writes target/classes and target/classpath/<set>.txt (one class path per
# set: each kafka-clients version, Kafka 2.8.2's core and tools, Streams, Connect, Spark's connector).
# Costs nothing when nothing changed since the last build; offline (mvn -o) when the cache has everything.
#   bash tests/jvm/build.sh
# Exits non-zero, with a line per missing piece on stderr, when something cannot be had; the jvm tests then
# fail saying which.
set -uo pipefail
cd "$(dirname "$0")"
mkdir -p target
exec 9>target/.build.lock
flock 9  # pytest-xdist workers and tests/run.sh may ask at once

# The stamp lists what the last complete build wrote; it stands while nothing is newer and all of it is there.
stamp=target/.built
fresh() {
    [ -f "$stamp" ] && [ -z "$(find pom.xml build.sh src -newer "$stamp" -print -quit)" ] || return 1
    local file
    while read -r file; do [ -e "$file" ] || return 1; done <"$stamp"
}
if fresh; then
    exit 0
fi
# Stale outputs go first: a set that cannot be rebuilt then has no class path, and its tests say so.
rm -rf "$stamp" target/classes target/classpath
for tool in java mvn; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "tests/jvm: $tool is not installed (Debian: apt-get install maven, which brings Java)" >&2
        exit 1
    fi
done

# The profiles of pom.xml, each one class path; the default (no profile) also compiles the programs.
sets=("" clients-3 clients-newest kafka-core streams connect spark)
log=target/build.log
: >"$log"
failed=0
for profile in "${sets[@]}"; do
    if [ -z "$profile" ]; then args=(compile); else args=(-P "$profile" dependency:build-classpath@classpath); fi
    # Offline first; a cache that lacks something is filled from Maven Central.
    if ! mvn -q -B -o "${args[@]}" >>"$log" 2>&1 && ! mvn -q -B "${args[@]}" >>"$log" 2>&1; then
        echo "tests/jvm: could not resolve or build ${profile:-the Java programs (kafka-clients 2.8.2)}; see tests/jvm/$log" >&2
        failed=1
    fi
done
[ "$failed" -eq 0 ] && { echo target/classes; ls -d target/classpath/*.txt; } >"$stamp"
exit "$failed"
