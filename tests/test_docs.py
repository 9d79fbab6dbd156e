"""The markdown pages: every relative link and image points to a file that exists, and every
#anchor to a heading of its page (GitHub's anchors: lower case, punctuation dropped, spaces to -)."""
import re

import pytest

from conftest import REPO

PAGES = sorted(p for p in REPO.rglob("*.md") if not any(part.startswith(".") for part in p.relative_to(REPO).parts))
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # a "# comment" in a code block is no heading
    return {re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
            for title in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def broken_links(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+://|mailto:", target):
            continue  # the web is not checked here
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no such heading")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_links_and_images_exist(page):
    assert not broken_links(page)


def test_the_check_finds_broken_links(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A title\n[ok](#a-title) [gone](missing.md) [bad anchor](#nowhere) ![img](pic.png)\n")
    assert [b.split(":")[0] for b in broken_links(page)] == ["missing.md", "#nowhere", "pic.png"]


def test_the_readme_is_a_front_door_that_links_every_page():
    """At most 200 lines (read in two minutes); the depth lives on the pages it links to."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    linked = {target.partition("#")[0] for target in LINK.findall(readme)}
    pages = {str(p.relative_to(REPO)) for p in [*(REPO / "docs").glob("*.md"), REPO / "course" / "README.md",
                                                   REPO / "benchmarks" / "README.md"]}
    assert pages <= linked, f"pages the README does not link: {sorted(pages - linked)}"
