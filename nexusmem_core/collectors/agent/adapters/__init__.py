"""One module per coding agent: its hook payloads read into ``payload.AgentEvent``, and a
note written back in the form that agent takes context.

Each module has ``parse(payload) -> AgentEvent | Dropped | None`` and ``answer(event, note)
-> str | None``, and the constants ``LABEL`` (the agent's name for people), ``NOTES`` (the
canonical events whose answer reaches the model) and ``CONTEXT`` (None when every note
reaches the agent, else one line saying which do not and why, for ``agent status``). The
hook imports only the one module of the agent it runs for.
"""

__all__: list[str] = []
