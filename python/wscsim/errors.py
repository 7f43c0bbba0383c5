"""The one exception a user sees for bad input: it names the field, what was given and
what is allowed. The CLI prints it on one line and exits with status 2."""

import re


class ScenarioError(Exception):
    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def from_core(path: str, message: str) -> ScenarioError:
    """The core's refusal, with "did you mean X?" when it lists the names allowed (kinds,
    keys, presets) and one of them is close to what was given."""
    return ScenarioError(path, message + did_you_mean(path, message))


# "given X; allowed: one of A, B, C" (a value or serde's unknown key or variant), or
# "given V; allowed: a key of kind "k": A, B, C" (the unknown key is the path's last part).
_GIVEN = re.compile(r'given (?:unknown (?:key|value) )?(?P<given>.*?); allowed: (?:(?P<of_kind>a key of kind "[^"]*": )|one of )(?P<names>.*)')
_NAME = re.compile(r'"?([\w.+-]+)"?')


def did_you_mean(path: str, message: str) -> str:
    """ "; did you mean X?" for the listed name closest to the misspelt one (case aside:
    DCTCP is dctcp), or "" when the message lists no names or none is close."""
    m = _GIVEN.fullmatch(message)
    if m is None:
        return ""
    listed = [_NAME.fullmatch(n) for n in m["names"].split(", ")]
    if not all(listed):
        return ""
    names = [n.group(1) for n in listed]
    given = (path.rsplit(".", 1)[-1] if m["of_kind"] else m["given"]).strip('"')
    if given in names:  # the name is right; the message is about something else
        return ""
    by_lower = {n.lower(): n for n in names}
    import difflib  # here, not at the top: `wscsim` answers signals sooner the less it loads first

    close = difflib.get_close_matches(given.lower(), list(by_lower), n=1, cutoff=0.6)
    if not close:
        return ""
    quote = '"' if m["names"].startswith('"') else ""
    return f"; did you mean {quote}{by_lower[close[0]]}{quote}?"
