"""docs/validation.md's fidelity figure is a count of its own table: every comparison with
the seeds is marked predicted, fitted or input (or as not a result), and the opening
paragraph's counts are those of the "off by" column."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "validation.md"
KINDS = {"predicted", "fitted", "input", "speed", "count", "none"}
PERCENT = re.compile(r"([+-]?\d+(?:\.\d+)?)%")


def comparison_rows(text: str) -> list[list[str]]:
    """The rows of the tables that compare wscsim with a seed (those with a kind column)."""
    rows, in_seed_table = [], False
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if not line.startswith("|"):
            in_seed_table = False
        elif len(cells) > 4 and cells[3] == "kind":
            in_seed_table = True
        elif in_seed_table and cells[0] != "---":
            rows.append(cells)
    return rows


def differences(off_by: str) -> list[float]:
    """The relative differences a cell gives, leaving out what its parentheses explain."""
    return [abs(float(m)) for m in PERCENT.findall(re.sub(r"\([^)]*\)", "", off_by))]


def test_every_comparison_with_a_seed_is_marked():
    rows = comparison_rows(DOC.read_text())
    assert len(rows) > 50
    for cells in rows:
        assert len(cells) == 8, cells[0]
        assert cells[3] in KINDS, (cells[0], cells[3])
        if cells[3] == "predicted":
            assert differences(cells[4]) or cells[4].startswith(("shape", "—")), cells[0]
        else:
            assert not differences(cells[4]), f"only predicted figures are counted: {cells[0]}"


def test_the_opening_counts_are_the_tables():
    text = DOC.read_text()
    rows = comparison_rows(text)
    predicted = [r for r in rows if r[3] == "predicted"]
    diffs = [d for r in predicted for d in differences(r[4])]
    counts = {k: sum(r[3] == k for r in rows) for k in KINDS}
    without_number = sum(not differences(r[4]) for r in predicted)
    opening = " ".join(text.split("\n\n")[1].split())
    expected = (
        f"of {len(diffs)} predicted figures with a number, "
        f"{sum(d <= 10 for d in diffs)} are within 10% of the paper and "
        f"{sum(d <= 25 for d in diffs)} within 25%."
    )
    assert expected in opening, opening
    kinds = (
        f"{counts['predicted']} comparisons are predicted, {counts['fitted']} fitted, "
        f"{counts['input']} an input; {without_number} predicted comparisons are shapes"
    )
    assert kinds in opening, opening


def test_a_difference_is_read_without_its_explanation():
    assert differences("+6.7%, -46% (sigmas)") == [6.7, 46.0]
    assert differences("-99% (0.40% against 27.41% dropped)") == [99.0]
    assert differences("shape") == []
