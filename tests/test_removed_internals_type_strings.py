"""TM008 on `.type()` string tests: the unittest forms are found, and each suggestion names every
dtype once, with the test's own polarity."""

from __future__ import annotations

import textwrap

import pytest

from codemods import registry
from codemods.api import transform_source


def _suggestions(code: str) -> list[str | None]:
    result = transform_source(textwrap.dedent(code), [registry.get("TM008")])
    assert result.problem is None and not result.changed
    return [f.suggestion for f in result.findings if f.kind == "finding"]


@pytest.mark.parametrize(
    "line, suggestion",
    [
        pytest.param("self.assertEqual(x.type(), 'torch.FloatTensor')", "self.assertEqual(x.dtype, torch.float32)", id="assertEqual"),
        pytest.param("self.assertEqual('torch.FloatTensor', x.type())", "self.assertEqual(x.dtype, torch.float32)", id="expected-first"),
        pytest.param("self.assertNotEqual(x.type(), 'torch.cuda.LongTensor')", "self.assertNotEqual(x.dtype, torch.int64)", id="assertNotEqual"),
        pytest.param(
            "self.assertIn(x.type(), ['torch.LongTensor', 'torch.cuda.LongTensor'])",
            "self.assertEqual(x.dtype, torch.int64)",
            id="assertIn-one-dtype-on-two-devices",
        ),
        pytest.param(
            "self.assertNotIn(x.type(), ('torch.FloatTensor', 'torch.cuda.FloatTensor', 'torch.HalfTensor'))",
            "self.assertNotIn(x.dtype, (torch.float32, torch.float16))",
            id="assertNotIn-each-dtype-once",
        ),
        pytest.param("self.assertTrue(x.type() == 'torch.FloatTensor')", "x.dtype == torch.float32", id="assertTrue"),
        pytest.param("assert 'torch.DoubleTensor' != x.type()", "x.dtype != torch.float64", id="reversed-not-equal"),
        pytest.param(
            "assert x.type() in ['torch.LongTensor', 'torch.cuda.LongTensor']", "x.dtype == torch.int64", id="in-one-dtype"
        ),
        pytest.param(
            "assert x.type() not in ['torch.IntTensor', 'torch.cuda.IntTensor', 'torch.LongTensor', 'torch.cuda.LongTensor']",
            "x.dtype not in (torch.int32, torch.int64)",
            id="not-in-each-dtype-once",
        ),
    ],
)
def test_type_string_suggestion(line: str, suggestion: str) -> None:
    code = f"import torch\n\n\ndef test(self, x):\n    {line}\n"
    assert _suggestions(code) == [suggestion]


def test_a_rewritten_class_name_test_names_each_dtype_once() -> None:
    code = "import torch\n\n\ndef f(x):\n    return type(x).__name__ in ['LongTensor', 'LongTensor', 'IntTensor']\n"
    result = transform_source(code, [registry.get("TM008")])
    assert "x.dtype in (torch.int64, torch.int32)" in result.code


@pytest.mark.parametrize(
    "line",
    [
        "self.assertEqual(layer.type(), 'conv')",
        "self.assertEqual(layer.type(), other.type())",
        "self.assertIn(layer.type(), ['conv', 'pool'])",
        "assert layer.type() == 'FloatTensor'",
    ],
)
def test_other_type_methods_are_left_alone(line: str) -> None:
    assert _suggestions(f"def test(self, layer, other):\n    {line}\n") == []


@pytest.mark.parametrize(
    "test",
    [
        "x.type() == 'torch.FloatTensor'",
        "x.type() != 'torch.DoubleTensor'",
        "x.type() in ['torch.LongTensor', 'torch.cuda.LongTensor']",
        "x.type() not in ('torch.FloatTensor', 'torch.cuda.FloatTensor', 'torch.HalfTensor')",
    ],
)
def test_the_suggestion_agrees_with_the_string_test_on_cpu(test: str) -> None:
    torch = pytest.importorskip("torch")
    (suggestion,) = _suggestions(f"import torch\n\n\ndef f(x):\n    return {test}\n")
    for x in (torch.zeros(2), torch.zeros(2).double(), torch.zeros(2).long(), torch.zeros(2).half()):
        assert eval(suggestion, {"torch": torch, "x": x}) == eval(test, {"x": x})
