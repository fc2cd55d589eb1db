"""fetch.sh's last check of the jars Maven copied: each opens as a zip file and every entry's data matches its
CRC-32. Maven checks checksums only when it downloads; a jar already in ~/.m2/repository is copied as it is, so a
byte rot or a cut-and-resumed download there would otherwise pass the fetch and fail later, at some class load."""

from __future__ import annotations

import pathlib
import sys
import zipfile
import zlib

bad = []
for jar in sorted(pathlib.Path(sys.argv[1]).glob("*.jar")):
    try:
        with zipfile.ZipFile(jar) as z:
            first_bad = z.testzip()
        if first_bad is not None:
            bad.append(f"{jar.name}: entry {first_bad} does not match its CRC")
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError) as exc:
        bad.append(f"{jar.name}: {exc}")
if bad:
    sys.exit(
        "error: corrupt jar(s): " + "; ".join(bad) + " -- delete them from ~/.m2/repository and run `make kafka` again"
    )
