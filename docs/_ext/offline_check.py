"""Sphinx extension: the built site loads nothing from the network.

The site must read the same offline as online: formulas rendered by a MathJax
that ships with the site, no font, script or stylesheet from a CDN. When an
HTML build finishes, every page and stylesheet of the output is scanned, and
each reference to a remote resource is a warning (so ``-W`` fails the build).
Links a reader follows (``<a href="https://...">``) are not resources, and are
allowed. ``tests/test_docs_build.py`` tests the scan itself.
"""

from __future__ import annotations

import re
from pathlib import Path

REMOTE = r"(?:https?:)?//"
# Tags that make a browser fetch something when the page loads.
_LOADING_TAG = re.compile(
    r"<(?P<tag>script|link|img|iframe|source|video|audio|embed|object)\b(?P<attributes>[^>]*)>",
    re.IGNORECASE,
)
_ATTRIBUTE = re.compile(
    r"\b(?P<name>src|href|data|srcset|poster)\s*=\s*(?P<quote>[\"']?)(?P<value>[^\"'\s>]*)",
    re.IGNORECASE,
)
# A stylesheet's imports and url()s, also inside <style> on a page.
_CSS_URL = re.compile(
    r"(?:@import\s+(?:url\()?|url\()\s*[\"']?(?P<value>" + REMOTE + r"[^\"')\s]*)",
    re.IGNORECASE,
)


def remote_resources(text: str) -> list[str]:
    """The remote URLs an HTML page or a stylesheet would load, in order.

    Args:
      text: The page's HTML, or a stylesheet.

    Returns:
      Every URL of a script, stylesheet, image, frame or media element, and of
      a CSS ``@import`` or ``url()``, that is not relative to the site.
    """
    found = []
    for match in _LOADING_TAG.finditer(text):
        tag = match["tag"].lower()
        attributes = match["attributes"]
        for attribute in _ATTRIBUTE.finditer(attributes):
            name = attribute["name"].lower()
            if tag == "link" and name == "href" and not _loads(attributes):
                continue  # <link rel="canonical"> and the like load nothing
            if re.match(REMOTE, attribute["value"], re.IGNORECASE):
                found.append(attribute["value"])
    found += [match["value"] for match in _CSS_URL.finditer(text)]
    return found


def _loads(link_attributes: str) -> bool:
    """Whether a ``<link>`` makes the browser fetch its ``href`` when the page loads."""
    rel = re.search(r"\brel\s*=\s*[\"']?([^\"'>]*)", link_attributes, re.IGNORECASE)
    kinds = set(rel[1].lower().split()) if rel else set()
    return bool(kinds & {"stylesheet", "preload", "modulepreload", "icon", "manifest", "prefetch"})


def site_problems(outdir: Path) -> list[str]:
    """Every remote resource in a built site, as ``"page: url"``."""
    problems = []
    for path in sorted(outdir.rglob("*")):
        if path.suffix not in {".html", ".css"} or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        relative = path.relative_to(outdir).as_posix()
        problems += [f"{relative}: {url}" for url in remote_resources(text)]
    return problems


def _check_site(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    for problem in site_problems(Path(app.outdir)):
        logger.warning(
            "offline: the built site loads a remote resource: %s",
            problem,
            type="offline",
            subtype="remote",
        )


def setup(app):
    """Check the built HTML once the build has finished."""
    # After the other build-finished handlers, such as the one that copies
    # MathJax into the output.
    app.connect("build-finished", _check_site, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
