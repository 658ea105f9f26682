"""``nexusmem ui``: a local web app over the same handlers as the CLI and MCP.

    server.py     binds loopback only, mints the launch's token, runs uvicorn
    guard.py      the security rules every request passes (host, token, origin, csrf)
    app.py        the routes: each page calls core handlers and renders a template
    live.py       server-sent events: new timeline rows while a shell or agent records them
    templates/    Jinja2, autoescaped; static/ the stylesheet and the little JavaScript

It holds no SQL: every read and every write is a ``nexusmem_core.handlers`` call, so a
verification made here is the one ``nexusmem query`` shows next.
"""
