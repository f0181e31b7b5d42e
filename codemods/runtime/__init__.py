"""Code that torch-migrate writes into users' files, kept here as real modules.

Nothing in the tool imports these modules: codemods read them as text (with
`importlib.resources`) and copy their functions into a migrated file. They are real Python so
that linters check them and the tests import and run them.
"""
