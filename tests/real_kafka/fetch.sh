#!/usr/bin/env bash
# Fetch Apache Kafka's jars (pinned in pom.xml, checked by Maven's checksums) into DEST/libs and compile the
# tests' Java helpers (java/*.java) into DEST/classes; `make kafka` runs it, and `make test` through it. A stamp
# makes a second run free. Anything missing is an error that names what to install: never a silent skip.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="$(mkdir -p "${1:?usage: fetch.sh DEST}" && cd "$1" && pwd)"
python="${PYTHON:-python3}"

die() {
    echo "error: $*" >&2
    exit 1
}

command -v java >/dev/null || die "no 'java' on PATH: install Java 17 (Debian: apt-get install openjdk-17-jdk-headless)"
command -v javac >/dev/null || die "no 'javac' on PATH: install a Java 17 JDK, not only a JRE (Debian: apt-get install openjdk-17-jdk-headless)"
command -v mvn >/dev/null || die "no 'mvn' on PATH: install Maven (Debian: apt-get install maven)"
java_major="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
[ "${java_major%%.*}" -ge 17 ] 2>/dev/null || die "Java ${java_major:-?} found; Apache Kafka 4.4 needs Java 17 or later"

stamp="$dest/.fetched"
jars_want="$(sha256sum <"$here/pom.xml" | cut -d' ' -f1)"
classes_want="$(cat "$here"/java/*.java | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" = "$jars_want $classes_want" ]; then
    touch "$stamp"
    exit 0
fi

if [ "$(cut -d' ' -f1 "$stamp" 2>/dev/null)" != "$jars_want" ]; then
    echo "Fetching Apache Kafka 4.4.0's jars from Maven Central into $dest/libs ..."
    start=$(date +%s)
    rm -rf "$dest/libs" "$stamp"
    log="$dest/mvn.log"
    if ! mvn -B -q --strict-checksums -f "$here/pom.xml" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$dest/libs" >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        die "Maven could not fetch Apache Kafka 4.4.0's jars (its output is above and in $log): check that this machine reaches Maven Central (repo.maven.apache.org), or its proxy settings in ~/.m2/settings.xml"
    fi
    # A jar that does not open, or whose entries do not match their CRCs (a cut download, a corrupt local
    # repository: Maven checks checksums only when it downloads), is named here, not at the broker's start.
    "$python" "$here/check_jars.py" "$dest/libs"
    echo "Apache Kafka 4.4.0: $(ls "$dest/libs" | wc -l) jars in $dest/libs, fetched in $(($(date +%s) - start)) s"
fi
rm -rf "$dest/classes"
mkdir -p "$dest/classes"
javac -nowarn -d "$dest/classes" -cp "$dest/libs/*" "$here"/java/*.java
echo "$jars_want $classes_want" >"$stamp"
