"""The course material stays true to the code: the reading guide's line ranges are those its anchors
give today, and every cross-reference in the scripts (a section number, a page and heading, a topic
of the reading guide) points to something that exists."""
import importlib.util
import re
import subprocess
import sys

import pytest

from conftest import REPO
from test_docs import anchors

spec = importlib.util.spec_from_file_location("reading_guide", REPO / "course" / "reading_guide.py")
reading_guide = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reading_guide)


def test_reading_guide_is_up_to_date():
    proc = subprocess.run([sys.executable, str(REPO / "course" / "reading_guide.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_reading_guide_check_fails_when_the_code_moves(tmp_path, monkeypatch):
    for script in reading_guide.SCRIPTS:  # the same scripts, one line lower
        (tmp_path / script).write_text("\n" + (REPO / script).read_text())
    monkeypatch.setattr(reading_guide, "REPO", tmp_path)
    page = (REPO / "course" / "README.md").read_text()
    assert reading_guide.page_with(page, reading_guide.table()) != page


@pytest.mark.parametrize("script", reading_guide.SCRIPTS)
def test_every_range_holds_its_topic(script):
    lines = (REPO / script).read_text().splitlines()
    spans = reading_guide.ranges(script)
    for (topic, anchor), line in reading_guide.anchor_lines(lines, script).items():
        assert any(first <= line + 1 <= last for first, last in spans[topic]), (topic, anchor)
    assert set(spans) == {t for t, by_script in reading_guide.TOPICS.items() if script in by_script}


@pytest.mark.parametrize("script", reading_guide.SCRIPTS)
def test_cross_references_in_the_code_exist(script):
    text = (REPO / script).read_text()
    banners = set(re.findall(r"^# (\d+)\. ", text, flags=re.M))
    for number in re.findall(r"\bsection (\d+)\b", text):
        assert number in banners, f"{script} refers to section {number}; its banners are {sorted(banners)}"
    for page, heading in re.findall(r"\(see ([\w/.-]+\.md), ([^)]+)\)", text):
        assert (REPO / page).exists(), f"{script} refers to {page}"
        titles = [a for a in anchors(REPO / page) if a.startswith(heading.lower().replace(" ", "-"))]
        assert titles, f"{script} refers to the heading {heading!r} of {page}"
    for topic in re.findall(r"\(reading guide: ([^)]+)\)", text):
        assert topic in reading_guide.TOPICS, f"{script} names {topic!r}, not a topic of the reading guide"
