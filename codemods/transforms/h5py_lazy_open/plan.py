"""TM201's plan: from a class's survey (and what it inherits) to the edits and findings for it.

`plan_class` is a pure function: the same survey and inherited attributes give the same plan,
and nothing is reported or rewritten here (`transform.py` does both, in the plan's order).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from codemods.transforms.h5py_lazy_open.survey import AttributeFate, ClassSurvey, OpenSurvey

UNDECIDED_SUGGESTION = "keep the arguments on self and open the file on first use"


@dataclass(frozen=True)
class Finding:
    """A case the plan leaves alone, reported at `node`."""

    node: cst.CSTNode
    message: str
    suggestion: str | None = None


@dataclass(frozen=True)
class ClassPlan:
    """What to change in one Dataset class.

    Either the class is migrated (`opens` is not empty), or its `__init__` reads a file its base
    class now opens lazily and closes it again (`reopened_by`), or nothing changes; `findings`
    come in any case."""

    findings: tuple[Finding, ...] = ()
    opens: tuple[cst.Call, ...] = ()  # h5py.File(...) calls to make lazy
    attributes: tuple[str, ...] = ()  # attributes that now hold an _H5Lazy
    closes: tuple[tuple[cst.Expr, str], ...] = ()  # `self.f.close()` -> the first parameter of its method
    reopened_by: cst.Attribute | None = None  # the first read of an inherited lazy attribute in `__init__`
    lazy_attributes: frozenset[str] | None = None  # the class's lazy attributes, for its subclasses; None: none


def plan_class(survey: ClassSurvey, inherited: frozenset[str]) -> ClassPlan:
    """The plan for one Dataset class; `inherited`: the lazy attributes of the classes it derives
    from that were migrated earlier in the module."""
    findings: list[Finding] = []
    migration = _migration(survey, findings)
    if migration is not None:
        opens, attributes, closes = migration
        return ClassPlan(tuple(findings), opens, attributes, closes, lazy_attributes=frozenset(attributes) | inherited)
    if not inherited or survey.self_name is None:
        return ClassPlan(tuple(findings))
    # A subclass whose `__init__` reads a lazy attribute after `super().__init__()` has closed it
    # reopens the file there: it must close it again before returning.
    reads = [node for attribute, node in survey.init_reads if attribute in inherited]
    return ClassPlan(tuple(findings), reopened_by=reads[0] if reads else None, lazy_attributes=inherited)


def _migration(
    survey: ClassSurvey, findings: list[Finding]
) -> tuple[tuple[cst.Call, ...], tuple[str, ...], tuple[tuple[cst.Expr, str], ...]] | None:
    """The opens to make lazy, the attributes holding them and the closes to redirect; None (with
    findings) when the class is not migrated."""
    if survey.init is None or survey.self_name is None:
        return None
    opens: list[cst.Call] = []
    attributes: list[str] = []
    undecided = False
    for found in survey.opens:
        if found.problem is not None:
            findings.append(Finding(found.call, found.problem, UNDECIDED_SUGGESTION))
            undecided = True
            continue
        kept = [fate.name for fate in found.kept_in if not _closed_before_return(found, fate, findings)]
        if not kept:
            # not kept on self (a `with` block, a value read and dropped), or read in full and
            # closed before `__init__` returns: fine as is
            continue
        opens.append(found.call)
        for attribute in kept:
            if attribute not in attributes:
                attributes.append(attribute)
    if undecided or not opens:
        return None
    if "__slots__" in survey.class_level_names:
        findings.append(
            Finding(opens[0], f"`{survey.name}` has `__slots__` (no instance `__dict__` for the lazy handle); open it lazily by hand")
        )
        return None
    clash = [a for a in attributes if a in survey.class_level_names]
    if clash:
        findings.append(
            Finding(opens[0], f"`{clash[0]}` is also defined at class level in `{survey.name}`; open the h5py file lazily by hand")
        )
        return None
    closes = tuple((close.statement, close.self_name) for close in survey.closes if close.attribute in attributes)
    return tuple(opens), tuple(attributes), closes


def _closed_before_return(found: OpenSurvey, fate: AttributeFate, findings: list[Finding]) -> bool:
    """Whether the opening method closes `self.<attribute>` on every path: then nothing is kept
    and there is nothing to migrate. A finding when the class reads the closed handle elsewhere
    (unless that method opens it again itself), or when the closed handle stays on `self`."""
    if not fate.closed:
        return False
    self_name, attribute = found.self_name, fate.name
    if fate.read_after_close_by is not None:
        findings.append(
            Finding(
                found.call,
                f"`__init__` closes `{self_name}.{attribute}`, yet `{fate.read_after_close_by}` reads it: reopen"
                " the h5py file on first use in each process by hand",
                "keep the file name on self and open the file lazily where it is read",
            )
        )
    elif not fate.dropped:
        findings.append(
            Finding(
                found.call,
                f"`{self_name}.{attribute}` still holds the closed h5py file, which cannot be pickled: DataLoader"
                " workers started with spawn or forkserver fail; drop it once closed or read in a `with` block",
                f"del {self_name}.{attribute}",
            )
        )
    return True
