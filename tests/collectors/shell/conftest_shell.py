"""Shared constants for the shell tests."""

HOME_ENV = {"HOME": "{tmp}/home", "XDG_CONFIG_HOME": "{tmp}/home/.config"}
