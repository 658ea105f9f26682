"""What went wrong, in the words an MCP client reads: one line naming the tool's parameters.

The core leaves the way out of a path that is not a repository, of a repository with no
memory, and of a database to rebuild or upgrade, to each adapter (see ``nexusmem_core.errors``);
here it is ``project_root``, ``sync_project`` and ``search_memory``, and the other ways out the
core marks in its text (``WaysOut``) are the tools' arguments (``confirm: true``). Arguments the
SDK refuses
before a tool runs come with pydantic's text, several lines ending in a URL; here each becomes
one clause.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from nexusmem_core.errors import (
    NexusMemError,
    NotAGitRepositoryError,
    NotInitialisedError,
    StoreError,
    UntrustedWorkspaceError,
    WaysOut,
)

__all__ = ["MCP_WORDS", "refused", "said", "said_to_reader"]

MCP_WORDS = WaysOut(
    sync="call sync_project",
    search="search_memory",
    confirm="call again with confirm: true",
    export="export the deny list with the CLI, `nexusmem forget --export FILE`, and import it "
    "there with `nexusmem forget --import FILE`",
)


def said(err: NexusMemError) -> str:
    """``err`` as the client reads it. A UsageError names its argument as the core's functions
    do, and the tools' parameters have those names."""
    if isinstance(err, StoreError):
        return MCP_WORDS.word(err.message)
    if isinstance(err, NotAGitRepositoryError):
        return f"{err}: pass project_root, the path of a git repository"
    if isinstance(err, NotInitialisedError):
        return f"{err}: call sync_project to build it from the repository"
    if isinstance(err, UntrustedWorkspaceError):
        return f"{err}; then call sync_project to build memory of your own"
    return MCP_WORDS.word(str(err))


def said_to_reader(err: NexusMemError) -> str:
    """``err`` as the reader of a resource reads it: resources take no project_root, and
    read the repository of the client's roots, else of the server's working directory."""
    if isinstance(err, NotAGitRepositoryError):
        return (
            f"{err}: resources read the first of the client's roots in a git repository, else "
            "the server's working directory; offer the repository as a root, or call the tools "
            "with project_root"
        )
    return said(err)


_RANGE = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}
_KINDS = {
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "missing": "is required",
}


def refused(exc: ValidationError, input_schema: dict[str, Any]) -> str:
    """The arguments ``exc`` refused, one clause each: ``budget: must be between 50 and
    200000``. ``input_schema`` is the tool's, for the bounds a range error leaves out."""
    properties = input_schema.get("properties", {})
    clauses: dict[str, str] = {}
    for error in exc.errors():
        name = ".".join(str(part) for part in error["loc"]) or "arguments"
        clauses.setdefault(name, f"{name}: {_what(error, properties.get(name, {}))}")
    return "; ".join(clauses.values())


def _what(error: Any, schema: dict[str, Any]) -> str:
    kind = error["type"]
    if kind in _RANGE:
        return _range(schema) or error["msg"].lower()
    if kind == "literal_error":
        return f"must be one of {error['ctx']['expected']}"
    return _KINDS.get(kind) or error["msg"][:1].lower() + error["msg"][1:]


def _range(schema: dict[str, Any]) -> str:
    """``must be between 1 and 500`` from a property's schema, or its optional form's."""
    for option in [schema, *schema.get("anyOf", [])]:
        low, high = option.get("minimum"), option.get("maximum")
        if low is not None and high is not None:
            return f"must be between {low} and {high}"
        if low is not None or high is not None:
            return f"must be at least {low}" if high is None else f"must be at most {high}"
    return ""
