"""localize: a pasted issue report read as one, and the files to change ranked with their evidence."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from support import cli_json, run_cli, write

from ragraf import Index
from ragraf.search.report import looks_like_report, parse_report

TRACEBACK_REPORT = """\
Registering a blueprint twice crashes the app

When I call `app.register_blueprint(bp)` a second time with a new name I get:

```
Traceback (most recent call last):
  File "/home/me/proj/run.py", line 9, in <module>
    app.register_blueprint(bp, name="again")
  File "/home/me/.venv/lib/python3.11/site-packages/shop/app.py", line 14, in register_blueprint
    blueprint.register(self, options)
  File "/home/me/.venv/lib/python3.11/site-packages/shop/blueprints.py", line 9, in register
    raise ValueError(f"The name '{self.name}' is already registered for this blueprint.")
ValueError: The name 'cart' is already registered for this blueprint.
```

shop 2.3.1, Python 3.11. Running with `--debug` does not help.
"""

SHOP = {
    "shop/__init__.py": "from shop.app import Shop\nfrom shop.blueprints import Blueprint\n",
    "shop/app.py": (
        "from shop.blueprints import Blueprint\n\n\nclass Shop:\n    def __init__(self):\n"
        "        self.blueprints = {}\n\n    def route(self, rule):\n        return rule\n\n"
        "    def register_blueprint(self, blueprint, **options):\n        name = options.get('name', blueprint.name)\n"
        "        self.blueprints[name] = blueprint\n        blueprint.register(self, options)\n"
    ),
    "shop/blueprints.py": (
        "class Blueprint:\n    def __init__(self, name):\n        self.name = name\n        self.apps = []\n\n"
        "    def register(self, app, options):\n        if app in self.apps:\n"
        "            raise ValueError(\n"
        "                f\"The name '{self.name}' is already registered for this blueprint.\"\n"
        "            )\n        self.apps.append(app)\n"
    ),
    "shop/cart.py": "def add_to_cart(cart, item):\n    cart.append(item)\n    return cart\n",
    "shop/pricing.py": (
        "TAX = 0.2\n\n\ndef price_with_tax(amount):\n    if amount < 0:\n"
        "        raise ValueError('negative amounts cannot be taxed')\n    return amount * (1 + TAX)\n"
    ),
    "shop/cli.py": (
        "import argparse\n\n\ndef parser():\n    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--dry-run', action='store_true', help='show the order, pay nothing')\n"
        "    return p\n"
    ),
    "shop/orders.py": "def run_order(order, dry=False):\n    # a dry run shows the order\n    return order\n",
    "tests/test_blueprints.py": (
        "from shop.blueprints import Blueprint\n\n\ndef test_register_blueprint_twice():\n"
        "    bp = Blueprint('cart')\n    assert bp.name == 'cart'\n"
    ),
    "docs/blueprints.md": "# Blueprints\n\nRegister a blueprint with register_blueprint; a name is registered once.\n",
    "examples/register_blueprint_demo.py": (
        "from shop import Shop, Blueprint\n\napp = Shop()\napp.register_blueprint(Blueprint('demo'))\n"
    ),
}


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    write(root, SHOP)
    Index.open(root, embedder="none").index()
    return root


def test_a_report_is_read_into_its_parts() -> None:
    report = parse_report(TRACEBACK_REPORT)
    assert [f.path.rsplit("/", 1)[-1] for f in report.frames] == ["run.py", "app.py", "blueprints.py"]
    assert report.frames[-1].line == 9 and report.frames[-1].function == "register"
    assert ("ValueError", "The name 'cart' is already registered for this blueprint.") in report.exceptions
    assert "register_blueprint" in report.names and "app.register_blueprint" in report.names
    assert "--debug" in report.flags
    assert "2.3.1" in report.versions and "3.11" in report.versions
    assert "The name 'cart' is already registered for this blueprint." in report.strings
    assert "Traceback" in report.code and "Registering a blueprint" in report.prose
    assert looks_like_report(TRACEBACK_REPORT) and not looks_like_report("where is retry backoff")


def test_dotted_modules_and_paths_are_read_apart() -> None:
    report = parse_report("With sphinx.ext.autodoc the option in conf.py and src/flask/app.py breaks.")
    assert "sphinx.ext.autodoc" in report.modules
    assert {"conf.py", "src/flask/app.py"} <= set(report.paths)
    assert "autodoc" in report.names


def test_the_innermost_frame_the_index_holds_leads_with_its_evidence(shop: Path) -> None:
    env = Index.open(shop, embedder="none").localize(TRACEBACK_REPORT, k=5)
    paths = [r["path"] for r in env.results]
    assert paths[:2] == ["shop/blueprints.py", "shop/app.py"]
    first = env.results[0]
    details = " | ".join(e["detail"] for e in first["evidence"])
    assert "named in the traceback (line 9" in details
    assert "message text" in details  # the raise site holds the message's words
    assert first["chunks"] and first["chunks"][0]["start_line"] <= 9 <= first["chunks"][0]["end_line"]
    assert first["kind"] == "code" and first["stale"] is False
    # The user's own script is outside the index: it is neither an answer nor "missing".
    assert not any("run.py" in n for n in env.notes)


def test_a_name_defined_once_points_at_its_file_and_code_ranks_before_tests_docs_and_examples(
    shop: Path,
) -> None:
    env = Index.open(shop, embedder="none").localize(
        "Calling register_blueprint with the same blueprint twice silently keeps both.\n"
        "I expected register_blueprint to reject it, the docs say a name is registered once.\n",
        k=8,
    )
    paths = [r["path"] for r in env.results]
    assert paths[0] == "shop/app.py"
    assert any(
        e["detail"].startswith("`register_blueprint` defined here") for e in env.results[0]["evidence"]
    )
    for later in ("tests/test_blueprints.py", "docs/blueprints.md", "examples/register_blueprint_demo.py"):
        if later in paths:
            assert paths.index(later) > paths.index("shop/app.py")


def test_an_error_message_finds_the_line_that_raises_it(shop: Path) -> None:
    env = Index.open(shop, embedder="none").localize(
        "Checkout fails for refunds.\n\nValueError: negative amounts cannot be taxed\n\nIt used to work.", k=3
    )
    first = env.results[0]
    assert first["path"] == "shop/pricing.py"
    message = next(e for e in first["evidence"] if e["channel"] == "message")
    assert message["line"] == 6


def test_a_flag_finds_the_file_that_declares_it(shop: Path) -> None:
    env = Index.open(shop, embedder="none").localize(
        "The `--dry-run` option still charges the card.\nA dry run of an order should show it only.", k=3
    )
    first = env.results[0]
    assert first["path"] == "shop/cli.py"
    assert any(e["channel"] == "literal" and e["line"] == 6 for e in first["evidence"])


def test_paths_the_index_does_not_hold_are_named_in_a_note(shop: Path) -> None:
    env = Index.open(shop, embedder="none").localize(
        "The crash is in shop/legacy/checkout.py, see also shop/cart.py\n\nadd_to_cart breaks.", k=3
    )
    assert env.results[0]["path"] == "shop/cart.py"
    assert any("shop/legacy/checkout.py" in n and "not in rev-0001" in n for n in env.notes)


@pytest.mark.parametrize(
    "text, note",
    [("", "empty report"), ("   \n\t ", "empty report"), ("some words", None)],
)
def test_empty_and_plain_reports_answer_without_error(shop: Path, text: str, note: str | None) -> None:
    env = Index.open(shop, embedder="none").localize(text, k=3)
    assert env.state == "fresh"
    if note:
        assert env.results == [] and any(note in n for n in env.notes)


def test_k_zero_binary_huge_and_foreign_reports_never_fail(shop: Path) -> None:
    idx = Index.open(shop, embedder="none")
    assert idx.localize(TRACEBACK_REPORT, k=0).results == []
    binary = bytes(range(256)).decode("latin-1") * 50
    answered = idx.localize(binary, k=3)
    assert answered.state == "fresh" and any("no text (binary data?)" in n for n in answered.notes)
    random_bytes = bytes((i * 7919 + 13) % 256 for i in range(5000)).decode("utf-8", errors="replace")
    assert any("binary data" in n for n in idx.localize(random_bytes, k=3).notes)
    assert not any("binary" in n for n in idx.localize(TRACEBACK_REPORT, k=3).notes)
    huge = (TRACEBACK_REPORT + "\n" + "lorem ipsum dolor " * 1000) * 80  # about 1.6 MB
    env = idx.localize(huge, k=3)
    assert {r["path"] for r in env.results[:2]} == {"shop/blueprints.py", "shop/app.py"}  # the two frames
    assert any("characters: the first" in n for n in env.notes)
    foreign = idx.localize("登録すると register_blueprint が二回目に失敗します。", k=3)
    assert foreign.results and foreign.results[0]["path"] == "shop/app.py"
    many = idx.localize(TRACEBACK_REPORT, k=50)
    assert any("clamped to 10" in n for n in many.notes)


def test_a_deleted_file_named_by_the_trace_is_marked_stale(shop: Path) -> None:
    (shop / "shop" / "blueprints.py").unlink()
    env = Index.open(shop, embedder="none").localize(TRACEBACK_REPORT, k=3)
    stale = {r["path"]: r["stale"] for r in env.results}
    assert stale.get("shop/blueprints.py") is True
    assert env.state == "drifted"


def test_the_cli_reads_a_report_from_a_file_or_stdin(shop: Path, tmp_path: Path) -> None:
    report = tmp_path / "issue.md"
    report.write_text(TRACEBACK_REPORT)
    from_file = cli_json("localize", str(report), "--root", str(shop), "-k", "3")
    assert from_file["op"] == "localize" and from_file["results"][0]["path"] == "shop/blueprints.py"
    assert set(from_file["results"][0]) >= {
        "path",
        "score",
        "kind",
        "language",
        "stale",
        "evidence",
        "chunks",
    }
    text = subprocess.run(
        [sys.executable, "-m", "ragraf.cli", "localize", "-", "--root", str(shop), "-k", "2"],
        input=TRACEBACK_REPORT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert next(line for line in text.stdout.splitlines() if line[:1].isdigit()).startswith(
        "1. shop/blueprints.py"
    )
    assert "named in the traceback (line 9" in text.stdout
    missing = run_cli("localize", str(tmp_path / "nope.md"), "--root", str(shop), "--json")
    assert missing.returncode == 2 and json.loads(missing.stdout)["error"]["code"]


@pytest.mark.anyio
async def test_the_mcp_tool_and_the_http_route_answer_as_the_library_does(shop: Path) -> None:
    from adapters.servers import mcp_client, running_http

    expected = [r["path"] for r in Index.open(shop, embedder="none").localize(TRACEBACK_REPORT, k=3).results]
    async with mcp_client(shop) as client:
        result = await client.call_tool("localize", {"text": TRACEBACK_REPORT, "top_k": 3})
    assert result.is_error is False
    assert [r["path"] for r in result.structured_content["results"]] == expected
    text = "\n".join(c.text for c in result.content)
    assert "1. shop/blueprints.py" in text and "named in the traceback (line 9" in text
    with running_http(shop) as server:
        status, body = server.post("localize", {"text": TRACEBACK_REPORT, "top_k": 3})
        assert status == 200 and [r["path"] for r in body["results"]] == expected
        status, body = server.post("localize", {"text": ""})
        assert status == 400 and body["error"]["code"] == "bad_arguments"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_frames_in_vendored_code_rank_after_the_projects_own(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    write(root, {
        "lib/models.py": "from lib.packages.wire.response import stream\n\n\ndef content(r):\n    return b''.join(stream(r))\n",
        "lib/packages/wire/response.py": "def stream(r):\n    while True:\n        yield r.read()\n",
    })  # fmt: skip
    Index.open(root, embedder="none").index()
    report = (
        "socket error not wrapped\n\nTraceback (most recent call last):\n"
        '  File "/site-packages/lib/models.py", line 5, in content\n'
        '  File "/site-packages/lib/packages/wire/response.py", line 3, in stream\n'
        "socket.error: [Errno 104] Connection reset by peer\n"
    )
    env = Index.open(root, embedder="none").localize(report, k=2)
    assert [r["path"] for r in env.results] == ["lib/models.py", "lib/packages/wire/response.py"]


def test_a_released_copy_of_a_library_ranks_after_the_projects_own_code(tmp_path: Path) -> None:
    root = tmp_path / "site"
    tooltip = "function tooltip(el) {{ el.position(); el.offset(); return el.tooltip; }}\n"
    write(root, {
        # The copy says the report's words more often than the project's module does.
        "site/static/jquery-3.5.1.js": tooltip.format() * 6,
        "site/widgets.js": "export function tooltipPosition(el) {\n  return el.offset();\n}\n",
    })  # fmt: skip
    Index.open(root, embedder="none").index()
    report = "Tooltip position is wrong\n\nThe tooltip offset ignores the scroll; position is off by the page offset.\n"
    env = Index.open(root, embedder="none").localize(report, k=2)
    assert [r["path"] for r in env.results] == ["site/widgets.js", "site/static/jquery-3.5.1.js"]


def test_search_of_a_pasted_report_cites_the_files_localize_ranks(shop: Path) -> None:
    idx = Index.open(shop, embedder="none")
    files = [r["path"] for r in idx.localize(TRACEBACK_REPORT, k=4).results]
    env = idx.search(TRACEBACK_REPORT, k=4)  # hybrid, as agents call it: lexical here (embedder none)
    assert [r.path for r in env.results] == files
    assert any("read as an issue report" in n for n in env.notes)
    first = env.results[0]
    assert first.start_line <= 9 <= first.end_line and "already registered" in first.snippet
    assert [r.path for r in idx.search(TRACEBACK_REPORT, k=2).results] == files[:2]
    short = idx.search("register blueprint", k=4)
    assert not any("read as an issue report" in n for n in short.notes)


def test_filters_narrow_localize_in_the_library_and_the_cli(shop: Path) -> None:
    idx = Index.open(shop, embedder="none")
    only_tests = idx.localize(TRACEBACK_REPORT, k=5, kind="test")
    assert only_tests.results and all(r["kind"] == "test" for r in only_tests.results)
    no_blueprints = idx.localize(TRACEBACK_REPORT, k=5, path="!shop/blueprints.py")
    assert "shop/blueprints.py" not in [r["path"] for r in no_blueprints.results]
    report = shop.parent / "report.txt"
    report.write_text(TRACEBACK_REPORT)
    narrowed = cli_json("localize", str(report), "--root", str(shop), "-g", "shop/app.py")
    assert [r["path"] for r in narrowed["results"]] == ["shop/app.py"]


def test_the_title_and_the_file_names_the_report_spells_are_evidence(shop: Path) -> None:
    report = (
        "Pricing of negative amounts\n\n"
        "Running the nightly job prints, among a few hundred lines of log:\n\n"
        + "".join(f"    job {n}: order {n} done, cart {n} kept\n" for n in range(40))
        + "\nand then the refunds are not priced. Pricing should allow them.\n"
    )
    assert parse_report(report).title == "Pricing of negative amounts"
    env = Index.open(shop, embedder="none").localize(report, k=5)
    first = env.results[0]
    assert first["path"] == "shop/pricing.py"
    channels = {e["channel"] for e in first["evidence"]}
    assert {"title", "name"} <= channels
    assert any(e["detail"] == "its name is words of the report" for e in first["evidence"])


def test_code_under_docs_and_tests_ranks_after_the_code_even_when_the_report_speaks_of_tests(
    tmp_path: Path,
) -> None:
    root = tmp_path / "pkg"
    write(root, {
        "pkg/render.py": "def render_table(rows):\n    return '\\n'.join(' | '.join(r) for r in rows)\n",
        "docs/examples/render_table_demo.py": "from pkg.render import render_table\nprint(render_table([['a']]))\n",
        "docs/conf.py": "project = 'pkg'\n# render_table rows in the docs' tables\n",
        "tests/test_render.py": "from pkg.render import render_table\n\ndef test_render_table_rows():\n    assert render_table([['a']]) == 'a'\n",
    })  # fmt: skip
    Index.open(root, embedder="none").index()
    env = Index.open(root, embedder="none").localize(
        "render_table drops empty rows\n\nMy test with pytest shows render_table rows are lost:\n"
        "test_render_table_rows passes but render_table([[]]) gives ''.\n",
        k=4,
    )
    assert [r["path"] for r in env.results][0] == "pkg/render.py"


def test_the_file_defining_the_reports_rare_names_passes_one_its_prose_describes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "shop"
    write(root, {
        "shop/orders.py": (
            "def place_order(order):\n    # the order total is the sum of the order lines, coupon applied once\n"
            "    order.total = sum(line.price for line in order.lines)\n    return order.total\n\n\n"
            "def order_summary(order):\n    return f'order total {order.total} after coupon'\n"
        ),
        "shop/coupons.py": (
            "def apply_coupon(cart, code):\n    cart.codes.append(code)\n    return recompute_totals(cart)\n\n\n"
            "def recompute_totals(cart):\n    cart.total = sum(cart.prices) - len(cart.codes)\n    return cart\n"
        ),
        "shop/cart.py": "def add_item(cart, price):\n    cart.prices.append(price)\n",
    })  # fmt: skip
    Index.open(root, embedder="none").index()
    report = (
        "The order total counts a coupon twice\n\nAfter apply_coupon the order total shows the coupon applied"
        " twice: the order summary says order total 8 after coupon, the order lines sum to 10."
        " recompute_totals runs once.\n"
    )
    ranked = [r["path"] for r in Index.open(root, embedder="none").localize(report, k=3).results]
    assert ranked[:2] == ["shop/coupons.py", "shop/orders.py"]  # it defines both names the report uses
    monkeypatch.setattr("ragraf.search.localize.DEFINITION_GAIN", 0.0)
    unranked = [r["path"] for r in Index.open(root, embedder="none").localize(report, k=3).results]
    assert unranked[:2] == ["shop/orders.py", "shop/coupons.py"]  # the prose's words alone


def test_the_definitions_rerank_leaves_files_defining_nothing_the_report_names_in_order() -> None:
    from ragraf.search.localize import FileAnswer, rerank_by_definitions

    answers = [FileAnswer("a.py", 1.0), FileAnswer("b.py", 0.9), FileAnswer("c.py", 0.5)]
    assert rerank_by_definitions(answers, {}, 100) == answers
    ranked = rerank_by_definitions(answers, {"b.py": {"parse_rows": 1}, "c.py": {"Row": 8}}, 100)
    assert [a.path for a in ranked] == ["b.py", "a.py", "c.py"]  # c gains less than the gap to a
    assert ranked[0].score == pytest.approx(0.9 * 1.3)
    assert ranked[2].rarity == pytest.approx(math.log(1 + 100 / 8))
