"""TM201's plan, on surveys built by hand and on surveys of small classes."""

from __future__ import annotations

import textwrap

import libcst as cst

from codemods.transforms.h5py_lazy_open.plan import UNDECIDED_SUGGESTION, ClassPlan, plan_class
from codemods.transforms.h5py_lazy_open.survey import (
    AttributeFate,
    ClassSurvey,
    CloseCall,
    OpenSurvey,
    survey_class,
)


def _call() -> cst.Call:
    call = cst.parse_expression('h5py.File(path, "r")')
    assert isinstance(call, cst.Call)
    return call


def _kept(name: str, *, closed: bool = False, read_after_close_by: str | None = None, dropped: bool = False) -> AttributeFate:
    return AttributeFate(name, closed, read_after_close_by, dropped)


def _survey(*opens: OpenSurvey, class_level_names=(), closes=(), init_reads=(), self_name="self") -> ClassSurvey:
    init = cst.parse_statement("def __init__(self, path):\n    pass\n")
    assert isinstance(init, cst.FunctionDef)
    return ClassSurvey(
        name="Frames",
        init=init,
        self_name=self_name,
        opens=opens,
        class_level_names=frozenset(class_level_names),
        closes=tuple(closes),
        init_reads=tuple(init_reads),
    )


def test_an_open_kept_on_self_is_made_lazy():
    call = _call()
    plan = plan_class(_survey(OpenSurvey(call, "self", None, (_kept("h5"),))), frozenset({"base"}))
    assert plan.opens == (call,) and plan.attributes == ("h5",)
    assert plan.findings == () and plan.reopened_by is None
    assert plan.lazy_attributes == {"h5", "base"}  # what subclasses later in the module inherit


def test_an_attribute_kept_by_two_opens_is_listed_once():
    first, second = _call(), _call()
    survey = _survey(OpenSurvey(first, "self", None, (_kept("h5"),)), OpenSurvey(second, "self", None, (_kept("h5"), _kept("x"))))
    assert plan_class(survey, frozenset()).attributes == ("h5", "x")


def test_an_open_not_kept_changes_nothing():
    plan = plan_class(_survey(OpenSurvey(_call(), "self", None, ())), frozenset())
    assert plan == ClassPlan()


def test_an_undecidable_open_is_a_finding_and_blocks_the_whole_class():
    undecided, fine = _call(), _call()
    survey = _survey(OpenSurvey(undecided, "self", "why not", ()), OpenSurvey(fine, "self", None, (_kept("h5"),)))
    plan = plan_class(survey, frozenset())
    assert plan.opens == () and plan.lazy_attributes is None
    assert [(f.node, f.message, f.suggestion) for f in plan.findings] == [(undecided, "why not", UNDECIDED_SUGGESTION)]


def test_closed_in_init_and_read_elsewhere_is_a_finding():
    call = _call()
    plan = plan_class(_survey(OpenSurvey(call, "me", None, (_kept("h5", closed=True, read_after_close_by="__getitem__"),))), frozenset())
    assert plan.opens == ()
    (finding,) = plan.findings
    assert finding.node is call and "`me.h5`" in finding.message and "`__getitem__` reads it" in finding.message


def test_closed_in_init_is_fine_once_dropped_and_a_finding_while_kept():
    kept = plan_class(_survey(OpenSurvey(_call(), "self", None, (_kept("h5", closed=True),))), frozenset())
    assert kept.opens == () and kept.findings[0].suggestion == "del self.h5"
    dropped = plan_class(_survey(OpenSurvey(_call(), "self", None, (_kept("h5", closed=True, dropped=True),))), frozenset())
    assert dropped == ClassPlan()


def test_slots_and_class_level_names_block_the_class():
    call = _call()
    slots = plan_class(_survey(OpenSurvey(call, "self", None, (_kept("h5"),)), class_level_names={"__slots__"}), frozenset())
    assert slots.opens == () and "__slots__" in slots.findings[0].message and slots.findings[0].node is call
    clash = plan_class(_survey(OpenSurvey(call, "self", None, (_kept("h5"),)), class_level_names={"h5"}), frozenset())
    assert clash.opens == () and clash.findings[0].message.startswith("`h5` is also defined at class level")


def test_only_closes_of_lazy_attributes_are_redirected():
    close_h5 = cst.Expr(cst.parse_expression("this.h5.close()"))
    close_log = cst.Expr(cst.parse_expression("self.log.close()"))
    closes = (CloseCall(close_h5, "this", "h5"), CloseCall(close_log, "self", "log"))
    plan = plan_class(_survey(OpenSurvey(_call(), "self", None, (_kept("h5"),)), closes=closes), frozenset())
    assert plan.closes == ((close_h5, "this"),)


def test_a_subclass_reading_an_inherited_lazy_attribute_closes_it_again():
    other, read = cst.parse_expression("self.n"), cst.parse_expression("self.h5")
    survey = _survey(init_reads=(("n", other), ("h5", read)))
    plan = plan_class(survey, frozenset({"h5"}))
    assert plan.opens == () and plan.reopened_by is read and plan.lazy_attributes == {"h5"}
    assert plan_class(survey, frozenset()) == ClassPlan()  # nothing inherited: nothing to close
    assert plan_class(_survey(), frozenset({"h5"})) == ClassPlan(lazy_attributes=frozenset({"h5"}))


class _Resolver:
    """Resolves names by their text: enough for modules that spell `h5py.File` in full."""

    def qualified_name(self, expr: cst.BaseExpression) -> str | None:
        return self.code_for(expr)

    def code_for(self, node: cst.CSTNode) -> str:
        return cst.Module(body=[]).code_for_node(node)

    def suppressed(self, node: cst.CSTNode) -> bool:
        return False


def _plan_of(source: str, inherited=frozenset()) -> tuple[ClassSurvey, ClassPlan]:
    node = cst.parse_statement(textwrap.dedent(source))
    assert isinstance(node, cst.ClassDef)
    survey = survey_class(node, _Resolver())
    return survey, plan_class(survey, inherited)


def test_survey_and_plan_of_a_class_opening_through_a_local_and_a_helper_method():
    survey, plan = _plan_of(
        """
        class Frames:
            def __init__(self, path):
                hf = h5py.File(path, "r")
                self.x = hf.get("x")
                self._open_labels(path)

            def _open_labels(me, path):
                me.y = h5py.File(path)["y"]

            def close(self):
                self.x.close()
        """
    )
    assert [o.self_name for o in survey.opens] == ["self", "me"]
    assert plan.attributes == ("x", "y") and len(plan.opens) == 2 and plan.findings == ()
    assert [self_name for _, self_name in plan.closes] == ["self"]


def test_survey_and_plan_of_a_file_read_in_full_and_closed():
    survey, plan = _plan_of(
        """
        class Frames:
            def __init__(self, path):
                self.h5 = h5py.File(path, "r")
                self.data = self.h5["x"][:]
                self.h5.close()
                del self.h5
        """
    )
    (found,) = survey.opens
    assert found.kept_in == (AttributeFate("h5", True, None, True),)
    assert plan == ClassPlan()


def test_survey_of_a_local_handle_assigned_twice_is_undecided():
    _, plan = _plan_of(
        """
        class Frames:
            def __init__(self, path):
                hf = h5py.File(path, "r")
                hf = h5py.File(path + ".bak", "r")
                self.x = hf["x"]
        """
    )
    assert plan.opens == () and plan.findings[0].message.startswith("`hf` is assigned more than once")
