"""Moved: the codemod author API is codemods/base.py; the engine's side is engine/walk.py."""

from codemods.base import CodemodContext, FileContext, MigrationCodemod, NodeT  # noqa: F401
