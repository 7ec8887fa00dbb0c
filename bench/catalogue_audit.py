"""Every catalogue entry and keyword family beside the code its own sample gets from `llm-doctor analyze`, for reading
each mapping against shared/codes.md: a wrong kind is wrong on every unseen log that prints the message, so the
audit reads what the sample yields (the checks' decision), not only the kind.

One line per entry: file:line, kind, flags (NF = fatal false, ECHO), the first codes of the sample's report, the
template (a family's words), the note. `--json` prints the records as JSON lines instead (to diff two runs).

    .venv/bin/python bench/catalogue_audit.py [--json] [GROUP ...]     (GROUP: vllm, tgi, families, ...)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.analysis import findings_of  # noqa: E402

DATA = ROOT / "doctor" / "data"


def records(groups: list[str]) -> list[dict[str, object]]:
    """Each entry's fields and the codes its sample's report ranks first."""
    files = sorted((DATA / "catalogue").glob("*.jsonl")) + [DATA / "families.jsonl"]
    out: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "sample.log"
        for path in files:
            if groups and path.stem not in groups:
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                e = json.loads(line)
                log.write_text(e["sample"] + "\n")
                out.append({"where": f"{path.name}:{n}", "kind": e["kind"], "fatal": e.get("fatal", True),
                            "echo": e.get("echo", False), "codes": [f.code for f in findings_of(log)][:3],
                            "template": e.get("template", e.get("words", "")), "note": e.get("note", "")})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("groups", nargs="*", help="catalogue file stems (and 'families') to read; all when none")
    ap.add_argument("--json", action="store_true", help="JSON lines instead of the table")
    args = ap.parse_args()
    for r in records(args.groups):
        if args.json:
            print(json.dumps(r, ensure_ascii=False))
            continue
        flags = ("" if r["fatal"] else " NF") + (" ECHO" if r["echo"] else "")
        codes = ",".join(str(c) for c in r["codes"]) or "(none)"  # type: ignore[union-attr]
        print(f"{r['where']} [{r['kind']}{flags}] -> {codes} | {str(r['template'])[:160]} || {str(r['note'])[:140]}")


if __name__ == "__main__":
    main()
