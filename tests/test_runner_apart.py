"""`runner.apart`: a phase computed in a forked child process, its result sent back; in this
process again when the child cannot answer."""

from __future__ import annotations

import os

import pytest

from codemods.engine.runner import apart


def _pid_and(value: int) -> tuple[int, int]:
    return os.getpid(), value * 2


def test_the_result_comes_from_a_child() -> None:
    pid, doubled = apart(_pid_and, 21)
    assert doubled == 42 and pid != os.getpid()


def _dies_in_a_child(parent: int) -> str:
    if os.getpid() != parent:
        os._exit(3)  # killed, crashed: no answer
    return "here"


def test_a_child_that_dies_leaves_the_work_to_this_process() -> None:
    assert apart(_dies_in_a_child, os.getpid()) == "here"


def _fails_in_a_child(parent: int) -> str:
    if os.getpid() != parent:
        raise ValueError("only there")
    return "here"


def test_a_child_that_raises_leaves_the_work_to_this_process() -> None:
    assert apart(_fails_in_a_child, os.getpid()) == "here"


def _raises(_: int) -> None:
    raise KeyError("a bug")


def test_a_bug_raises_here_with_its_own_exception() -> None:
    with pytest.raises(KeyError, match="a bug"):
        apart(_raises, 0)


def _apart_in_a_daemon(queue) -> None:
    queue.put((os.getpid(), apart(_pid_and, 1)[0]))


def test_in_a_daemonic_process_which_may_have_no_children_it_runs_in_place() -> None:
    import multiprocessing

    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    daemon = context.Process(target=_apart_in_a_daemon, args=(queue,), daemon=True)
    daemon.start()
    worker, computed_in = queue.get(timeout=30)
    daemon.join()
    assert computed_in == worker


def _sigint_ignored(_: int) -> bool:
    import signal

    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_pool_workers_leave_ctrl_c_to_the_process_that_waits_on_them() -> None:
    # a terminal's Ctrl-C reaches every process of the group: a worker interrupted mid-item
    # printed its traceback; the process that waits on the pool stops the run
    from codemods.engine.runner import in_processes

    assert list(in_processes(_sigint_ignored, [1, 2, 3, 4], jobs=2)) == [True] * 4
