"""Type stubs for the native core (crates/wscsim-python): conversion at the boundary only."""

from typing import Any

VERSION: str
RUSTC_VERSION: str
GIT_COMMIT: str

class ScenarioError(Exception):
    """args: (field path, message)."""

class SchemeError(Exception):
    """A Python scheme raised while the simulation called it; the message has its traceback."""

class Simulation:
    """One simulation built from scenario JSON. `schemes` maps the class strings of
    `kind = "python"` schemes to class objects."""

    def __init__(self, scenario_json: str, schemes: dict[str, type] | None = None) -> None: ...
    def run_until(self, until_ps: int) -> bool:
        """Runs until simulated time `until_ps`; True once the run has ended."""
    @property
    def now_ps(self) -> int: ...
    @property
    def end_ps(self) -> int: ...
    @property
    def events(self) -> int:
        """Events run so far."""
    @property
    def finished(self) -> bool: ...
    def summary_json(self) -> str: ...
    def tables(self) -> dict[str, list[Any]]:
        """{name: [(column, kind, data)]}; kind "f8"/"i8"/"i4" (little-endian bytes), "str"
        (list of str) or "cat" ((levels, bytes of one-byte codes)). Consumes the
        simulation (its memory is released before the largest table is built): call it
        last; anything called after it raises RuntimeError."""
    def captures(self) -> list[tuple[str, bytes, int, int]]:
        """[(capture point, pcap bytes, packets kept, packets seen)]."""

class Packet:
    """A packet as a Python scheme sees it; dscp, priority and fields may be changed."""

    src: int
    dst: int
    flow: int
    size: int
    payload: int
    seq: int
    in_port: int
    ecn_capable: bool
    dscp: int
    priority: int
    fields: list[int]

class Port:
    """A port as a Python scheme sees it: a snapshot taken for the call."""

    index: int
    now_ps: int
    rate_bps: int
    bytes_queued: int
    packets_queued: int
    limit_bytes: int
    queue_packets: list[int]
    queue_bytes: list[int]

def check(scenario_json: str, build: bool = False) -> str:
    """Validates (and with `build`, builds the simulation without running it); returns the
    scenario with every default, as JSON."""

def catalogue() -> dict[str, list[str]]: ...
