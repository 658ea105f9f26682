"""Session summaries (``sources.session``): one derived node per settled conversation session,
written by a local Ollama chat model from the session's ``conversation_turn`` nodes.

``step.summarize_sessions`` is the sync step; ``scan.scan_sessions`` is ``scan-session``'s
preview. Both decide what to send the same way (``plan``), and build the same prompt
(``prompt``); ``reply`` reads what the model sends back.
"""

__all__: list[str] = []
