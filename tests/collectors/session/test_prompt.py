"""The prompt: the highest-signal exchanges within the budget, in the order they happened,
the opening question always in, and a hash that changes only with the prompt."""

from __future__ import annotations

from nexusmem_core.collectors.session.prompt import Turn, build_prompt, opening_line


def turn(n: int, signal: float, answer: str = "", question: str = "") -> Turn:
    return Turn(
        n, 0, 1_767_225_600 + n * 60, signal, question or f"question {n}", answer or f"answer {n}"
    )


def test_the_best_exchanges_that_fit_are_sent_in_order():
    turns = [turn(n, signal, "x" * 300) for n, signal in enumerate([0.1, 0.9, 0.2, 0.8, 0.3])]
    prompt = build_prompt(turns, prompt_chars=1500)
    assert len(prompt.user) <= 1500
    asked = [n for n in range(5) if f"Developer: question {n}\n" in prompt.user]
    assert asked == [0, 1, 3]  # the opening question, then by signal; shown in order
    assert (prompt.turns, prompt.used) == (5, 3)
    assert prompt.user.index("question 1") < prompt.user.index("question 3")


def test_one_long_answer_is_cut_to_leave_room_for_the_rest():
    turns = [turn(0, 0.5), turn(1, 1.0, "y" * 50_000), turn(2, 0.9)]
    prompt = build_prompt(turns, prompt_chars=4000)
    assert prompt.used == 3 and len(prompt.user) <= 4000 and "y [...]" in prompt.user


def test_the_hash_follows_the_prompt():
    turns = [turn(0, 0.5), turn(1, 0.6)]
    same = build_prompt(list(reversed(turns)), 12_000)
    assert build_prompt(turns, 12_000).hash == same.hash
    assert build_prompt([*turns, turn(2, 0.1)], 12_000).hash != same.hash


def test_the_fallback_title_is_the_first_line_of_the_opening_question():
    long = "Why does the uploader " + "keep timing out " * 10 + "\nsecond line"
    assert opening_line([turn(3, 0.9, question="later"), turn(1, 0.1, question=long)]).startswith(
        "Why does the uploader keep"
    )
    title = opening_line([turn(1, 0.1, question=long)])
    assert len(title) <= 90 and title.endswith("…") and "second" not in title
    secret = "export GITHUB_TOKEN=ghp_" + "A" * 36
    assert "ghp_" not in opening_line([turn(0, 0.1, question=secret)])


def test_a_cut_never_leaves_half_a_secret_behind():
    token = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
    # Stored before a rule existed, the token would be cut in two where the answer is cut.
    for offset in range(301, 312, 3):  # the answer is cut near its 320th character
        answer = "x" * offset + f" token {token} end"
        prompt = build_prompt([turn(0, 0.5, answer)], prompt_chars=1600)
        assert token[:12] not in prompt.user and "token [REDACTED]" in prompt.user
