"""GitHub issues and pull requests, read through the ``gh`` CLI (``sources.github``)."""
