"""Who runs an emulation's programs, and with which capabilities (docs/emulation.md).

`wscsim emulate` needs root to make namespaces; the scenario's `[[emulation.apps]]`
commands do not. By default each runs as root with every capability dropped (setpriv of
util-linux: empty inheritable, ambient and bounding sets, and no new privileges, so that
no set-user-ID or file-capability program gains any back); with `emulation.user` it runs
as that user instead. A program that needs a capability names it in its app's
`capabilities`, from the short list below.

These keys are read here, by the front end; the core does not know them, so they are
checked here and left out of what the core is given.
"""

from __future__ import annotations

import pwd

from .errors import ScenarioError

# What a network program may ask for: its own namespace's network, raw sockets, low
# ports, locked memory and real-time priority. Nothing that reaches outside the namespace
# (sys_admin, sys_module, sys_ptrace, dac_override and the like) is offered.
CAPABILITIES = ("net_admin", "net_raw", "net_bind_service", "net_broadcast", "ipc_lock", "sys_nice")

ALLOW_COMMANDS_HINT = ("pass --allow-commands (allow_commands=True from Python) to run the scenario's commands: "
                       "a scenario runs commands only when you say so")


def _apps(emulation: dict) -> list:
    apps = emulation.get("apps")
    return apps if isinstance(apps, list) else []


def check_entries(sc: dict) -> None:
    """Checks `emulation.user` and each app's `capabilities` (the core carries them without
    reading them)."""
    emulation = sc.get("emulation")
    if not isinstance(emulation, dict):
        return
    if "user" in emulation:
        user_entry(emulation["user"])
    for i, app in enumerate(_apps(emulation)):
        if isinstance(app, dict) and "capabilities" in app:
            capabilities(app["capabilities"], f"emulation.apps[{i}].capabilities")


def user_entry(user) -> pwd.struct_passwd:
    """The password entry of `emulation.user`; refused unless it names a user here."""
    if not isinstance(user, str) or not user or "\0" in user:
        raise ScenarioError("emulation.user", f"given {user!r}; allowed: the name of a user of this machine, such as \"nobody\"")
    try:
        return pwd.getpwnam(user)
    except KeyError:
        raise ScenarioError("emulation.user", f"given {user!r}; allowed: a user of this machine (in its password database), "
                                              "such as \"nobody\"") from None


def capabilities(given, field: str) -> list[str]:
    """An app's capabilities, as setpriv names them; refused unless each is on the list."""
    if not isinstance(given, list):
        raise ScenarioError(field, f"given {given!r}; allowed: a list of capability names from {', '.join(CAPABILITIES)}")
    names = []
    for k, c in enumerate(given):
        name = c.lower().removeprefix("cap_") if isinstance(c, str) else c
        if name not in CAPABILITIES:
            raise ScenarioError(f"{field}[{k}]", f"given {c!r}; allowed: one of {', '.join(CAPABILITIES)}")
        names.append(name)
    return sorted(set(names))


def setpriv_argv(user: str | None, caps: list[str]) -> list[str]:
    """The setpriv command line that runs a program as `user` (root if None) with only
    `caps`: set in the inheritable, ambient and bounding sets so that they survive its
    exec, everything else dropped from all three."""
    wanted = ",".join(["-all", *(f"+{c}" for c in caps)])
    argv = ["setpriv", f"--inh-caps={wanted}", f"--ambient-caps={wanted}", f"--bounding-set={wanted}", "--no-new-privs"]
    if user is not None:
        entry = user_entry(user)
        argv[1:1] = [f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups"]
    return argv


def program_environment(user: str | None, base: dict) -> dict:
    """The environment a program starts with: wscsim's, with HOME, USER and LOGNAME those
    of `user` when it runs as one."""
    if user is None:
        return base
    entry = user_entry(user)
    return {**base, "HOME": entry.pw_dir, "USER": entry.pw_name, "LOGNAME": entry.pw_name}


def who(user: str | None, caps: list[str]) -> str:
    """How a program runs, in words: "as root without capabilities", "as nobody with net_raw"."""
    person = f"as {user}" if user is not None else "as root"
    return f"{person} with {', '.join(caps)}" if caps else f"{person} without capabilities"
