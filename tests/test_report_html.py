"""report.html: one self-contained page per migration. Checked on its text (what it says, what
it escapes, that it names no host) and in a real browser, headless Chromium: it renders without
a console message, with JavaScript (sorting, filtering) and without (the tables are all there),
for the example and for a project of more than 1,000 files."""

import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers import REPO, run_cli, run_cli_without

from gpu2npu.report.html import HEADLESS_CHROMIUM, side_by_side
from gpu2npu.report.html_process import PageProcess

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (apt-get install chromium): the browser tests of report.html",
)
CHROMIUM_FLAGS = (*HEADLESS_CHROMIUM, "--enable-logging=stderr", "--v=0")  # console messages on stderr
HOSTILE = "import torch\nbanner = '<script>alert(1)</script>' if torch.cuda.is_available() else ''\n"


def migrated_page(tmp_path, files, *options) -> Path:
    project = tmp_path / "proj"
    for rel, text in files.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    result = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "-v", "2.8.0", *options, timeout=600)
    assert result.returncode == 0, result.stderr
    return tmp_path / "out" / "proj_msft" / "transplant_result_file" / "report.html"


def browse(tmp_path, page: Path, *flags):
    """(DOM after load, console messages) of ``page`` in headless Chromium."""
    profile = tmp_path / f"profile{len(list(tmp_path.glob('profile*')))}"
    command = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *flags, page.as_uri()]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    return run.stdout, console


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_the_example_page_says_what_the_reports_say(tmp_path):
    page = REPO / "examples" / "expected" / "cifar_resnet_msft" / "transplant_result_file" / "report.html"
    text = page.read_text()
    assert "<b>5 / 9</b>files changed" in text
    assert "<b>42</b>changes" in text
    assert "<b>1</b>unknown APIs" in text
    assert "Findings (6: 0 errors, 4 warnings, 2 notes)" in text
    unknown = '<td>unknown</td><td><a href="#file-3">train.py</a></td><td>216</td>'
    assert f"{unknown}<td>torch.distributed.destroy_process_group</td>" in text
    assert '<details class="file" id="file-3" open>\n<summary>train.py ' in text
    assert '<span class="rule">G2N030</span> change environment variable CUDA_VISIBLE_DEVICES' in text


def test_the_page_names_no_host_and_loads_nothing(tmp_path):
    page = REPO / "examples" / "expected" / "cifar_resnet_msft" / "transplant_result_file" / "report.html"
    parser = Tags()
    parser.feed(page.read_text())
    assert [
        tag for tag, _ in parser.tags if tag in ("img", "link", "iframe", "object", "embed", "base", "form")
    ] == []
    for tag, attrs in parser.tags:
        assert "src" not in attrs and "srcset" not in attrs, tag
        assert attrs.get("href", "#").startswith("#"), (tag, attrs)
    policy = [a["content"] for tag, a in parser.tags if a.get("http-equiv") == "Content-Security-Policy"]
    assert policy == ["default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"]
    assert not re.search(r"url\(|@import|https?://", page.read_text())


def test_code_from_the_project_is_shown_as_text(tmp_path):
    page = migrated_page(tmp_path, {"train.py": HOSTILE})
    text = page.read_text()
    assert text.count("<script") == 1  # the page's own
    assert "banner = &#39;&lt;script&gt;alert(1)&lt;/script&gt;&#39; if torch.cuda.is_available()" in text
    assert "banner = &#39;&lt;script&gt;alert(1)&lt;/script&gt;&#39; if torch.npu.is_available()" in text


def test_the_page_is_rendered_in_a_process_of_its_own(tmp_path):
    """The migrating process never imports pandas (a third of its peak memory on a large
    repository): a run where ``import pandas`` fails in it still writes the same page."""
    result = run_cli_without("pandas", "migrate", "-i", REPO / "examples" / "cifar_resnet", "-o", tmp_path)
    assert result.returncode == 0, result.stderr
    page = tmp_path / "cifar_resnet_msft" / "transplant_result_file" / "report.html"
    expected = REPO / "examples" / "expected" / "cifar_resnet_msft" / "transplant_result_file" / "report.html"
    assert page.read_bytes() == expected.read_bytes()


def test_a_page_that_cannot_be_rendered_is_an_error_naming_the_page(tmp_path):
    page = {"data": {}, "input_root": str(tmp_path / "gone"), "output_root": str(tmp_path)}
    page.update(changed=["a.py"], notes={}, target="npu", mode="full")
    with PageProcess() as pages, pytest.raises(RuntimeError, match=r"rendering report.html: .*No such file"):
        pages.render(tmp_path, page)
    assert not (tmp_path / "report.html").exists()


def test_a_page_process_left_unused_is_stopped(tmp_path):
    with PageProcess() as pages:
        child = pages._child
        assert child.poll() is None  # waiting for its page
    assert child.returncode is not None


@needs_chromium
def test_the_example_renders_in_chromium_with_and_without_javascript(tmp_path):
    page = REPO / "examples" / "expected" / "cifar_resnet_msft" / "transplant_result_file" / "report.html"
    dom, console = browse(tmp_path, page, "--dump-dom")
    assert console == []
    body = re.search(r"<body[^>]*>", dom).group(0)
    assert re.search(r'data-ready="\d+"', body) and re.search(r'data-loaded="\d+"', body)
    assert '<input id="filter" type="search" placeholder="filter findings">' in dom
    assert dom.count('<td class="sev sev-') == 6
    # the same page where the browser runs no script: the tables are all there, without the filter
    blocked = tmp_path / "no_script.html"
    blocked.write_text(page.read_text().replace("script-src 'unsafe-inline'", "script-src 'none'"))
    dom, console = browse(tmp_path, blocked, "--dump-dom")
    assert len(console) == 1 and "violates the following Content Security Policy directive" in console[0]
    assert "data-ready" not in dom and 'id="filter"' not in dom
    assert dom.count('<td class="sev sev-') == 6
    assert dom.count('<tr class="note">') == page.read_text().count('<tr class="note">') > 20


@needs_chromium
def test_a_screenshot_of_the_example_has_the_window_size_and_content(tmp_path):
    page = REPO / "examples" / "expected" / "cifar_resnet_msft" / "transplant_result_file" / "report.html"
    shot = tmp_path / "page.png"
    _, console = browse(tmp_path, page, "--window-size=1280,1600", f"--screenshot={shot}")
    assert console == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1280, 1600)
    assert len(data) > 50_000  # text, charts and diffs, not a blank page


@needs_chromium
def test_the_page_of_a_project_of_1100_files_renders_with_its_diffs_closed(tmp_path):
    files = {f"pkg{n % 11}/m{n}.py": f"import torch\nx{n} = torch.zeros({n}).cuda()\n" for n in range(1100)}
    files["pkg0/hostile.py"] = HOSTILE
    page = migrated_page(tmp_path, files, "-j", "2")
    dom, console = browse(tmp_path, page, "--dump-dom")
    assert console == []
    assert "<b>1101 / 1101</b>files changed" in dom
    assert dom.count('<details class="file" id="file-') == 1101
    assert '<details class="file" id="file-0">' in dom  # more than 50 files: closed
    assert "<p>Open a file to see its changes.</p>" in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom


def test_side_by_side_pairs_changed_lines_and_puts_each_note_on_its_line():
    old = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]
    new = ["a", "B", "c", "d", "e", "f", "g", "h", "i", "j", "k"]
    diff = side_by_side("f.py", "file-0", old, new, {2: [("G1", "b to B", "tip")], 10: [("G2", "add k", "")]})
    shown = [(r.kind, r.old_number, r.new_number, [n[0] for n in r.notes]) for r in diff.rows]
    assert shown == [
        ("same", 1, 1, []),
        ("both", 2, 2, ["G1"]),
        ("same", 3, 3, []),
        ("same", 4, 4, []),
        ("same", 5, 5, []),
        ("gap", None, None, []),
        ("same", 8, 8, []),
        ("same", 9, 9, []),
        ("same", 10, 10, []),
        ("new", None, 11, ["G2"]),
    ]
    assert (diff.added, diff.removed) == (2, 1)
