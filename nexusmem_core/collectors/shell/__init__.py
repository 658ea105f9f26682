"""Shell memory: hooks that record commands, the log they write, and history-file scraping."""
