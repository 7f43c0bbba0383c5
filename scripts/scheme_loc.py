#!/usr/bin/env python3
"""Lines of code per built-in scheme (Flexplane's Table 3): non-blank lines that are not
comments, outside the unit tests, in crates/wscsim/src/scheme/<name>.rs. The first count
leaves out the scheme's `resolve` (its parameters' checks and defaults), which Flexplane's
counts do not hold either; the second is the whole file."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMES = ["droptail", "red", "dctcp", "priority", "drr", "hull", "pfabric"]
RESOLVE = re.compile(r"^    (?:/// [^\n]*\n    )*fn resolve\(.*?^    }\n", re.M | re.S)


def loc(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("//"))


def counts(path: Path) -> tuple[int, int]:
    """(the scheme less its `resolve`, the whole file), tests left out."""
    code = path.read_text().split("#[cfg(test)]")[0]
    assert len(RESOLVE.findall(code)) == 1, f"{path}: one `fn resolve` expected"
    return loc(RESOLVE.sub("", code)), loc(code)


if __name__ == "__main__":
    print("| scheme | lines of code | with its parameters' checks |\n|---|---|---|")
    for s in SCHEMES:
        behaviour, whole = counts(ROOT / "crates/wscsim/src/scheme" / f"{s}.rs")
        print(f"| {s} | {behaviour} | {whole} |")
