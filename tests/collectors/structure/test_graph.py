"""The import graph per language: small trees in real git repositories, every edge exact.

Each tree also holds what must not become an edge: a package from outside the repository, an
import that is commented out, and a string that reads like an import, each naming a file that
does exist, so only the extractor's judgement keeps the edge out.
"""

from __future__ import annotations

import ast
import os
import time
from collections.abc import Callable
from typing import Any

from nexusmem_core.collectors.structure import build_graph, list_tree
from nexusmem_core.collectors.structure.python import _plain, extract
from nexusmem_core.collectors.structure.sources import MAX_BYTES

from ...conftest import Repo


async def edges_of(repo: Repo) -> set[tuple[str, str, str]]:
    graph, _ = build_graph(await list_tree(repo.path))
    return {(e.src, e.dst, e.lang) for e in graph.edges}


def tree(make_repo: Callable[[str], Repo], files: dict[str, str]) -> Repo:
    repo = make_repo("tree")
    repo.commit("the tree", files)
    return repo


PYTHON = {
    "pkg/__init__.py": "",
    "pkg/a.py": (
        "import os\n"
        "import requests\n"
        "from . import b\n"
        "from .sub import (  # a comment (\n    c,\n)\n"
        "from pkg.util import helper\n"
        "# from . import d\n"
        'TEXT = """\nfrom . import d\n"""\n'
        "def later():\n"
        "    from ..top import thing\n"
        "try: import pkg.d.nothing\n"
        "except ImportError: pass\n"
    ),
    "pkg/b.py": "",
    "pkg/d.py": "",
    "pkg/util.py": "def helper():\n    pass\n",
    "pkg/sub/__init__.py": "",
    "pkg/sub/c.py": "from ..b import value\n",
    "top.py": "import json\n",
    "json.py": "",  # shadows nothing: `import json` is the standard library's
    "src/lib2/__init__.py": "",
    "src/lib2/core.py": "from lib2 import extra\nimport lib2.missing\n",
    "src/lib2/extra.py": "",
    "scripts/run.py": "import helpers\nimport lib2.core\n",
    "scripts/helpers.py": "",
    "broken.py": "from pkg import b\ndef (:\nfrom pkg import\n",
}


async def test_python_imports_resolve_against_packages_src_layout_and_scripts(make_repo):
    repo = tree(make_repo, PYTHON)
    assert await edges_of(repo) == {
        ("pkg/a.py", "pkg/b.py", "python"),
        ("pkg/a.py", "pkg/sub/c.py", "python"),
        ("pkg/a.py", "pkg/util.py", "python"),
        ("pkg/a.py", "top.py", "python"),
        ("pkg/sub/c.py", "pkg/b.py", "python"),
        ("src/lib2/core.py", "src/lib2/extra.py", "python"),
        ("scripts/run.py", "scripts/helpers.py", "python"),
        ("scripts/run.py", "src/lib2/core.py", "python"),
        ("broken.py", "pkg/b.py", "python"),  # a syntax error elsewhere does not hide it
    }
    graph, _ = build_graph(await list_tree(repo.path))
    assert graph.unparsed == 1  # broken.py's last line: passed over and counted, not fatal


# The forms of import statement read by a pattern, not parsed (python._plain); what ast reads
# of each is what the pattern must give. Then statements it leaves to ast.
READ_BY_PATTERN = [
    "import os",
    "import a.b as c, d  # noqa\r",
    "from . import (\n    a,\n    b as c,\n)",
    "from ...pkg.mod import *",
    "from __future__ import annotations",
]
LEFT_TO_AST = [
    "import if",
    "import as",
    "from  import x",
    "from .import x",
    "from a import b.c",
    "from a import b,",
    "from a import (*)",
    "from a import (  # why\n    b,\n)",
    "import a \\\n    .b",
    "import café",
    "import a\rimport b",
]


def by_ast(statement: str) -> list[Any]:
    node = ast.parse(statement).body[0]
    if isinstance(node, ast.Import):
        return [[0, alias.name, []] for alias in node.names]
    assert isinstance(node, ast.ImportFrom)
    return [[node.level, node.module, [alias.name for alias in node.names]]]


def test_a_python_statement_read_by_a_pattern_gives_what_ast_gives() -> None:
    for statement in READ_BY_PATTERN:
        assert _plain(statement) is not None, statement
        assert extract(statement) == (by_ast(statement), 0), statement
    assert [s for s in LEFT_TO_AST if _plain(s) is not None] == []


JAVASCRIPT = {
    "web/src/index.ts": (
        'import { a } from "./a";\n'
        "import b from './b.js';\n"
        'export * from "./lib";\n'
        'import React from "react";\n'
        '// import { gone } from "./gone";\n'
        '/* import "./gone" */\n'
        "const s = \"import x from './fake'\";\n"
        "const t = `require('./fake')`;\n"
        'const re = /[\'"]/; import c from "./c";\n'
        'const lazy = await import("./lazy");\n'
        'const name = "./fake"; import(name);\n'
        'import "./styles.css";\n'
    ),
    "web/src/a.ts": "export const a = 1;\n",
    "web/src/b.ts": "export default 2;\n",
    "web/src/c.tsx": "export default 3;\n",
    "web/src/lib/index.ts": "",
    "web/src/lazy.tsx": "",
    "web/src/gone.ts": "",
    "web/src/fake.ts": "",
    "web/src/styles.css": "",
    "web/src/util.js": (
        'const x = require("../shared/x.cjs");\nconst y = require("./missing");\n'
        'const z = obj.require("./a");\n'
    ),
    "web/shared/x.cjs": "",
    "web/node_modules/dep/index.js": 'require("../../src/a")\n',
}


async def test_javascript_relative_specifiers_resolve_with_extensions_and_index(make_repo):
    repo = tree(make_repo, JAVASCRIPT)
    assert await edges_of(repo) == {
        ("web/src/index.ts", "web/src/a.ts", "typescript"),
        ("web/src/index.ts", "web/src/b.ts", "typescript"),  # './b.js' compiles from b.ts
        ("web/src/index.ts", "web/src/lib/index.ts", "typescript"),
        ("web/src/index.ts", "web/src/c.tsx", "typescript"),
        ("web/src/index.ts", "web/src/lazy.tsx", "typescript"),
        ("web/src/index.ts", "web/src/styles.css", "typescript"),
        ("web/src/util.js", "web/shared/x.cjs", "javascript"),
    }  # node_modules is vendored: neither read nor pointed at


GO = {
    "go.mod": "// the shop\nmodule example.com/shop\n\ngo 1.22\n",
    "cmd/server/main.go": (
        "package main\n\n"
        "/*\nfunc old() {}\n*/\n"  # a declaration in a comment ends nothing
        "import (\n"
        '\t"fmt"\n'
        '\t"example.com/shop/internal/store"\n'
        '\tdb "example.com/shop/internal/db"\n'
        '\t// "example.com/shop/internal/old"\n'
        '\t"github.com/lib/pq"\n'
        ")\n\n"
        'var s = `import "example.com/shop/internal/fake"`\n'
        "func main() {}\n"
        'const t = `\nimport "example.com/shop/internal/old"\n`\n'  # after a declaration
    ),
    "internal/store/store.go": 'package store\n\nimport "example.com/shop/internal/db"\n',
    "internal/store/cache.go": "package store\n",
    "internal/store/store_test.go": "package store\n",
    "internal/db/db.go": "package db\n",
    "internal/old/old.go": "package old\n",
    "internal/fake/fake.go": "package fake\n",
}


async def test_go_imports_point_at_every_non_test_file_of_the_package(make_repo):
    repo = tree(make_repo, GO)
    assert await edges_of(repo) == {
        ("cmd/server/main.go", "internal/store/cache.go", "go"),
        ("cmd/server/main.go", "internal/store/store.go", "go"),
        ("cmd/server/main.go", "internal/db/db.go", "go"),
        ("internal/store/store.go", "internal/db/db.go", "go"),
    }


RUST = {
    "Cargo.toml": '[package]\nname = "shop"\n',
    "src/main.rs": (
        "mod config;\n"
        "mod net;\n"
        "// mod ghost;\n"
        "/* outer /* nested */ mod ghost; */\n"
        "#[cfg(test)]\n"
        "mod tests;\n"
        "use crate::config::Settings;\n"
        "use serde::Deserialize;\n"
        'const S: &str = "mod fake;";\n'
        "fn pick<'a>(x: &'a str) -> &'a str { x }\n"
    ),
    "src/config.rs": "pub struct Settings;\n",
    "src/net/mod.rs": "pub mod client;\nuse super::config;\n",
    "src/net/client.rs": (
        "use super::super::config::Settings;\nmod inline {\n    mod hidden;\n}\n"
    ),
    "src/net/client/hidden.rs": "",
    "src/ghost.rs": "",
    "src/fake.rs": "",
    "src/tests.rs": "use crate::{config, net::client};\n",
}


async def test_rust_mod_declarations_and_crate_paths_resolve_to_module_files(make_repo):
    repo = tree(make_repo, RUST)
    assert await edges_of(repo) == {
        ("src/main.rs", "src/config.rs", "rust"),
        ("src/main.rs", "src/net/mod.rs", "rust"),
        ("src/main.rs", "src/tests.rs", "rust"),
        ("src/net/mod.rs", "src/net/client.rs", "rust"),
        ("src/net/mod.rs", "src/config.rs", "rust"),
        ("src/net/client.rs", "src/config.rs", "rust"),
        ("src/tests.rs", "src/config.rs", "rust"),
        ("src/tests.rs", "src/net/client.rs", "rust"),
    }  # `mod hidden;` sits in an inline module: its file cannot be told, so no edge


JAVA = {
    "src/main/java/com/acme/App.java": (
        "package com.acme;\n\n"
        "import com.acme.util.Strings;\n"
        "import com.acme.model.Order.Line;\n"
        "import static com.acme.util.Strings.trim;\n"
        "import java.util.List;\n"
        "import com.acme.model.*;\n"
        "// import com.acme.legacy.Old;\n"
        "class App {\n"
        '    String s = "import com.acme.legacy.Old;";\n'
        '    String t = """\nimport com.acme.legacy.Old;\n""";\n'
        "}\n"
    ),
    "src/main/java/com/acme/util/Strings.java": "package com.acme.util;\nclass Strings {}\n",
    "src/main/java/com/acme/model/Order.java": "package com.acme.model;\nclass Order {}\n",
    "src/main/java/com/acme/legacy/Old.java": "package com.acme.legacy;\nclass Old {}\n",
    "src/test/java/com/acme/AppTest.java": "package com.acme;\nimport com.acme.util.Strings;\n",
}


async def test_java_imports_resolve_under_the_source_roots_the_packages_declare(make_repo):
    repo = tree(make_repo, JAVA)
    main = "src/main/java/com/acme"
    assert await edges_of(repo) == {
        (f"{main}/App.java", f"{main}/util/Strings.java", "java"),
        (f"{main}/App.java", f"{main}/model/Order.java", "java"),  # Order.Line is nested
        ("src/test/java/com/acme/AppTest.java", f"{main}/util/Strings.java", "java"),
    }


async def test_the_working_tree_decides_what_is_read_and_pointed_at(make_repo):
    repo = tree(
        make_repo,
        {"app/main.py": "from app import gone, kept\n", "app/gone.py": "", "app/kept.py": ""},
    )
    (repo.path / "app/gone.py").unlink()  # deleted, not yet committed
    repo.write("app/new.py", "from app import kept\n")  # untracked, not ignored
    repo.write("app/big.py", "from app import kept\n" + "#" * MAX_BYTES)
    repo.write(".gitignore", "ignored/\n")
    repo.write("ignored/x.py", "from app import kept\n")
    graph, _ = build_graph(await list_tree(repo.path))
    assert {(e.src, e.dst) for e in graph.edges} == {
        ("app/main.py", "app/kept.py"),
        ("app/new.py", "app/kept.py"),
    }
    assert graph.too_large == 1


async def test_a_build_reads_again_only_the_files_that_changed(make_repo):
    repo = tree(make_repo, {"a.py": "import b\n", "b.py": "", "c.py": ""})
    for name in ("a.py", "b.py", "c.py"):
        os.utime(repo.path / name, (time.time() - 60, time.time() - 60))
    first, cache = build_graph(await list_tree(repo.path), {})
    assert first.read == 3 and set(cache) == {"a.py", "b.py", "c.py"}
    again, cache = build_graph(await list_tree(repo.path), cache)
    assert again.read == 0 and again.edges == first.edges
    repo.write("b.py", "import c\n")  # just now: read, and not cached until it settles
    changed, cache = build_graph(await list_tree(repo.path), cache)
    assert changed.read == 1 and "b.py" not in cache
    assert {(e.src, e.dst) for e in changed.edges} == {("a.py", "b.py"), ("b.py", "c.py")}


async def test_a_source_linked_out_of_the_work_tree_or_a_fifo_is_never_read(make_repo, tmp_path):
    """A committed link to a file outside (its imports would be read from there) and a FIFO
    where a module was (reading it would wait for ever) are left out of the graph."""
    outside = tmp_path / "outside.py"
    outside.write_text("from pkg import b\n")
    repo = tree(make_repo, {"pkg/__init__.py": "", "pkg/b.py": "", "pkg/c.py": "from . import b\n"})
    os.symlink(outside, repo.path / "pkg" / "evil.py")
    os.symlink("c.py", repo.path / "pkg" / "alias.py")  # a link inside the tree is read
    repo.commit("links")
    (repo.path / "pkg" / "c.py").unlink()
    os.mkfifo(repo.path / "pkg" / "c.py")
    assert await edges_of(repo) == set()
    (repo.path / "pkg" / "c.py").unlink()
    (repo.path / "pkg" / "c.py").write_text("from . import b\n")
    assert await edges_of(repo) == {
        ("pkg/c.py", "pkg/b.py", "python"),
        ("pkg/alias.py", "pkg/b.py", "python"),
    }
