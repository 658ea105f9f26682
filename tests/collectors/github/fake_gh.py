"""A stand-in for the ``gh`` CLI, installed as ``gh`` on PATH by the ``fake_gh`` fixture.

It answers the two ``gh api`` calls NexusMem makes from a file of recorded threads (in the
GraphQL shape): the REST issue list (filtered by ``since``, oldest change first, paged) and the
GraphQL query by number. Started once per call, so it imports only what it must.

Environment: ``FAKE_GH_DATA`` (the threads), ``FAKE_GH_LOG`` (each call's argv, one JSON line
each), ``FAKE_GH_MODE`` (``ok``, ``nologin``, ``ratelimit``, ``network``, ``badjson``,
``slow``) and ``FAKE_GH_FAIL_AFTER`` (calls answered before the mode applies).
"""

import json
import os
import re
import sys
import time

FAILURES = {
    "nologin": (
        4,
        "",
        "To get started with GitHub CLI, please run:  gh auth login\n"
        "Alternatively, populate the GH_TOKEN environment variable with a GitHub API "
        "authentication token.\n",
    ),
    "ratelimit": (
        1,
        '{"message":"API rate limit exceeded for user ID 1.","documentation_url":'
        '"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}',
        "gh: API rate limit exceeded for user ID 1. (HTTP 403)\n",
    ),
    "network": (
        1,
        "",
        "error connecting to api.github.com\n"
        "check your internet connection or https://githubstatus.com\n",
    ),
    "badjson": (0, "<!DOCTYPE html><html><body>Unicorn!</body></html>", ""),
}


def main(argv):
    calls = log(argv)
    mode = os.environ.get("FAKE_GH_MODE", "ok")
    if mode != "ok" and calls > int(os.environ.get("FAKE_GH_FAIL_AFTER", "0")):
        if mode == "slow":
            time.sleep(30)
        code, out, err = FAILURES[mode]
        sys.stdout.write(out)
        sys.stderr.write(err)
        return code
    args = [a for a in argv if a not in ("api", "--hostname", "github.com")]
    with open(os.environ["FAKE_GH_DATA"], encoding="utf-8") as f:
        threads = json.load(f)
    if args[0] == "graphql":
        return graphql(args[1:], threads)
    match = re.fullmatch(r"repos/acme/widget/issues\?(.*)", args[0])
    if match:
        return issue_list(dict(p.split("=", 1) for p in match.group(1).split("&")), threads)
    sys.stderr.write("gh: Not Found (HTTP 404)\n")
    return 1


def log(argv):
    path = os.environ.get("FAKE_GH_LOG")
    if not path:
        return 1
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(argv) + "\n")
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


def issue_list(params, threads):
    """GitHub's REST list: ``since`` inclusive, ordered by update time then number."""
    since = params.get("since", "")
    rows = sorted((t for t in threads if t["updatedAt"] >= since), key=order)
    size, page = int(params["per_page"]), int(params["page"])
    out = []
    for t in rows[(page - 1) * size : page * size]:
        item = {"number": t["number"], "title": t["title"], "updated_at": t["updatedAt"]}
        if t["__typename"] == "PullRequest":
            item["pull_request"] = {"url": t["url"]}
        out.append(item)
    sys.stdout.write(json.dumps(out))
    return 0


def order(thread):
    return (thread["updatedAt"], thread["number"])


def graphql(args, threads):
    """The query by number: each alias ``tN`` gets thread N, its connections cut to ``last``
    as GitHub would. A thread marked ``gone`` is null with an error, as for a deleted one."""
    fields = dict(args[i + 1].split("=", 1) for i in range(0, len(args) - 1, 2))
    last = int(fields["comments"])
    by_number = {t["number"]: t for t in threads}
    repository, errors = {}, []
    for number in re.findall(r"t(\d+): issueOrPullRequest", fields["query"]):
        thread = by_number.get(int(number))
        if thread is None or thread.get("gone"):
            repository[f"t{number}"] = None
            errors.append({"type": "NOT_FOUND", "message": f"Could not resolve #{number}"})
            continue
        thread = dict(thread)
        for key in ("comments", "reviews"):
            if key in thread:
                connection = dict(thread[key])
                connection["totalCount"] = len(connection["nodes"])
                connection["nodes"] = connection["nodes"][-last:]
                thread[key] = connection
        repository[f"t{number}"] = thread
    body = {"data": {"repository": repository}}
    if errors:
        body["errors"] = errors
    sys.stdout.write(json.dumps(body))
    if errors:
        sys.stderr.write(f"gh: {errors[0]['message']}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
