"""NexusMem's MCP server: ``python -m nexusmem_mcp`` serves stdio."""

__all__ = ["build_server", "main"]


def __getattr__(name: str):  # lazy: importing the package must not import mcp
    if name in __all__:
        from . import server

        return getattr(server, name)
    raise AttributeError(name)
