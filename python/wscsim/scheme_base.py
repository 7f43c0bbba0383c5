"""The optional base class of Python schemes, apart from the code that loads and checks
them (schemes.py), so that the static check of a class (static_class.py) can read its
members without importing that code."""


class Scheme:
    """Optional base class for Python schemes: one queue, everything classified to it, and
    the constructor's arguments kept. A subclass still writes `enqueue` and `schedule`."""

    queues = 1

    def __init__(self, switch: str, ports: int, **params):
        self.switch = switch
        self.ports = ports
        self.params = params

    def classify(self, packet, port) -> int:
        return 0
