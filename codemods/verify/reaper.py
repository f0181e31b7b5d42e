"""Find and stop what a verification's commands left running, and the watchdog that does it when verify dies.

Every command runs in a session of its own, so its process group holds the command and every
child that stayed in it. A daemon leaves the group (setsid), but keeps its environment: every
command gets `TAG=<session>/<run>`, and `members` finds a process by that too. Linux only (it
reads /proc); elsewhere `members` answers None and only whole groups are signalled.

Run as a script (`python reaper.py <session>`), this module is the watchdog of one verification:
it waits until verify closes its stdin or disappears (SIGKILL gives verify no chance to clean
up), then stops every process tagged with the session and the groups they are in. It imports
nothing from the package, so it starts in milliseconds and whatever the package's state.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

TAG = "TORCH_MIGRATE_VERIFY_RUN"
PROC = "/proc"
POLL = 0.05


def _stat(pid: str) -> tuple[str, int] | None:
    """(state, process group) of a process, None when it is gone."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0].decode(), int(fields[2])


def _tagged(pid: str, tag: bytes) -> bool:
    """Whether the process's environment carries `tag` or a run under it (`tag/...`)."""
    try:
        with open(f"{PROC}/{pid}/environ", "rb") as handle:
            entries = handle.read().split(b"\0")
    except OSError:  # gone, or not ours to read
        return False
    return any(e == tag or e.startswith(tag + b"/") for e in entries)


def members(groups: set[int], tag: str | None) -> dict[int, int] | None:
    """Live processes (not zombies) in one of `groups` or tagged with `tag`, each with its group;
    None where there is no /proc to look in."""
    try:
        pids = [p for p in os.listdir(PROC) if p.isdigit()]
    except OSError:
        return None
    wanted = f"{TAG}={tag}".encode() if tag else None
    own = os.getpid()
    found = {}
    for pid in pids:
        stat = _stat(pid)
        if stat is None or stat[0] in ("Z", "X") or int(pid) == own:
            continue
        if stat[1] in groups or (wanted is not None and _tagged(pid, wanted)):
            found[int(pid)] = stat[1]
    return found


def _signal(groups: set[int], pids: set[int], sig: int) -> None:
    for group in groups:
        try:
            os.killpg(group, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _alive(groups: set[int], tag: str | None) -> dict[int, int] | None:
    """`members`; without /proc, {} once no group answers (a tagged process cannot be seen there)."""
    found = members(groups, tag)
    if found is not None:
        return found
    for group in groups:
        try:
            os.killpg(group, 0)
            return None
        except (ProcessLookupError, PermissionError):
            pass
    return {}


def stop(groups: set[int], tag: str | None, grace: float) -> None:
    """SIGTERM the groups and every tagged process; SIGKILL whatever is still alive after `grace`."""
    found = _alive(groups, tag)
    if found == {}:
        return
    _signal(groups, set(found or ()), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while found != {} and time.monotonic() < deadline:
        time.sleep(POLL)
        found = _alive(groups, tag)
    if found != {}:
        _signal(groups, set(found or ()), signal.SIGKILL)


def watch(session: str, grace: float = 1.0) -> None:
    """Until stdin closes or the parent goes, then stop everything the session started."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is verify's to handle, not ours
    parent = os.getppid()
    fd = sys.stdin.fileno()
    while os.getppid() == parent:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready and not os.read(fd, 4096):
            break
    # The groups the tagged processes are in catch children that dropped the environment.
    keep = {os.getpgid(0)}
    tagged = members(set(), session) or {}
    stop({g for g in tagged.values() if g not in keep}, session, grace)


if __name__ == "__main__":
    watch(sys.argv[1])
