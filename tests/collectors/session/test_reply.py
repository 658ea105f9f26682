"""Reading the model's reply: the titles a small model gets wrong are rejected, the opening
question stands in, and content on a rejected first line is kept."""

from __future__ import annotations

import pytest

from nexusmem_core.collectors.session.reply import parse_reply

PARTS = "Decisions: five retries, because three failed.\nUnfinished: none."
FALLBACK = "Why do uploads fail under load?"


@pytest.mark.parametrize(
    ("first", "title"),
    [
        ("Raise the retry budget after S3 timeouts", "Raise the retry budget after S3 timeouts"),
        ("Title: Raise the retry budget", "Raise the retry budget"),
        ('"Raise the retry budget."', "Raise the retry budget"),
        ("Session summary: raise the retry budget", "raise the retry budget"),
        ("提高 S3 上传的重试次数", "提高 S3 上传的重试次数"),
        ("I/O errors in the uploader", "I/O errors in the uploader"),
    ],
)
def test_a_usable_title_is_kept_without_its_label_or_quotes(first: str, title: str):
    summary = parse_reply(f"{first}\n\n{PARTS}", FALLBACK)
    assert summary is not None
    assert (summary.title, summary.title_fallback, summary.body) == (title, False, PARTS)


@pytest.mark.parametrize(
    ("first", "problem", "kept"),
    [
        ("Sure! Here is a summary of the session:", "preamble", False),
        ("Certainly. The session covered the retry loop", "preamble", False),
        ("Here's what happened", "preamble", False),
        ("Summary of the session", "generic", False),
        ("Session Summary", "generic", False),
        ("# Summary", "generic", False),
        ("## Retry budget", "heading", True),
        ("- Raised the retry budget to five", "bullet", True),
        ("1. Raised the retry budget to five", "bullet", True),
        ("**Retry budget**", "markdown", True),
        ("Decisions: five retries", "label", True),
        ("We looked at " + "the retry loop and the upload timeouts, " * 3, "too long", True),
    ],
)
def test_a_bad_title_gives_way_to_the_opening_question(first: str, problem: str, kept: bool):
    summary = parse_reply(f"{first}\n{PARTS}", FALLBACK)
    assert summary is not None
    assert (summary.title, summary.title_fallback, summary.problem) == (FALLBACK, True, problem)
    assert summary.body.endswith(PARTS)
    assert summary.body.startswith(first.strip()) is kept  # content stays, chatter goes


@pytest.mark.parametrize(
    "text", ["", "   \n\n", "Raise the retry budget", "<think>hmm</think>\nRetry budget\n\n"]
)
def test_a_reply_without_a_summary_is_none(text: str):
    assert parse_reply(text, FALLBACK) is None


def test_a_reasoning_block_is_not_the_title():
    summary = parse_reply(f"<think>\nThe user wants...\n</think>\nRetry budget\n{PARTS}", FALLBACK)
    assert summary is not None and (summary.title, summary.body) == ("Retry budget", PARTS)
