"""Sphinx configuration for lodestar's documentation site.

Build it strictly, as CI does (decision 0008):

    pip install -e ".[docs]"
    sphinx-build -W --keep-going -n -b html docs docs/_build/html

The API reference is generated from each public module's ``__all__``, the
notebooks in ``notebooks/`` are executed at build time, and the build fails on
any warning: a broken reference, an undocumented public name, a notebook cell
that raises.
"""

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

import lodestar  # noqa: E402  (autodoc imports it anyway; importing it is cheap)

# The notebooks read this to shrink their data and training runs, so that the
# docs build stays a few minutes long. Set before any kernel starts, which
# inherits it.
os.environ.setdefault("LODESTAR_NOTEBOOK_QUICK", "1")

project = "lodestar"
author = "The lodestar authors"
copyright = "2026, The lodestar authors"
# Written once, in lodestar/__init__.py.
release = lodestar.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    # MathJax 3 from the sphinx-mathjax-offline package, copied into the site
    # (_static/mathjax/) instead of loaded from a CDN: formulas render offline.
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "myst_nb",
    "api_coverage",
    # The measure table on the front page, from lodestar._registry.
    "measure_table",
    # Fails the build if a page or stylesheet loads anything from the network.
    "offline_check",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]

# -- Strictness ----------------------------------------------------------------
# With -n every reference must resolve. There is no network at build time, so
# there is no intersphinx: references into other projects' documentation
# cannot resolve, and are exempt by name. References into lodestar are not.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(jax|jaxlib|jaxtyping|numpy|np|sklearn|scipy|optax|rax|tqdm|matplotlib)(\..*)?"),
    # The standard library, for the same reason.
    (r"py:.*", r"(os|io|typing|collections|pathlib|numbers|argparse|dataclasses)\..*"),
    # jaxtyping shape annotations in signatures, e.g. Float[Array, "*batch n"].
    (r"py:.*", r"(Array|Bool|Float|Int|Num|Shaped|Key|PRNGKeyArray|ArrayLike|DTypeLike)"),
    # The statistics results' private alias for "NumPy float64 eagerly, a JAX
    # float64 array under jit"; each result's docstring says which.
    (r"py:class", r"Float64Result"),
]

# -- API reference ---------------------------------------------------------------
# Each public module gets one page, generated from its ``__all__`` by the
# templates in _templates/autosummary; a new function or module appears
# without touching docs/.
autosummary_generate = True
autosummary_ignore_module_all = False
autosummary_imported_members = False
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
add_module_names = False

# The docstrings are Google style. "Remarks" is lodestar's own section: how a
# function is commonly misused, as on the Lodestar.Metrics pages.
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_use_ivar = True
napoleon_custom_sections = ["Remarks"]

# -- MyST and notebooks ----------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3

# The notebooks are committed without outputs (tests/test_notebooks.py checks
# this), so every build executes them; a cell that raises fails the build.
# "force" runs every notebook into the site. CI, whose test tiers already run
# each notebook top to bottom (tests/test_notebooks.py, warnings as errors),
# builds with LODESTAR_DOCS_EXECUTE=off to check the rest of the site.
nb_execution_mode = os.environ.get("LODESTAR_DOCS_EXECUTE", "force")
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 600
nb_merge_streams = True

# -- HTML --------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = "lodestar"
html_theme_options = {
    "show_toc_level": 2,
    "navigation_with_keys": False,
    # The primary sidebar has the search field; the header would repeat it.
    "navbar_persistent": [],
}
# The version under the title, with a link to the highlighted source that
# viewcode generates (there is no public repository to link to).
html_sidebars = {
    "**": [
        "navbar-logo.html",
        "lodestar-version.html",
        "search-button-field.html",
        "sbt-sidebar-nav.html",
    ]
}


def skip_namedtuple_fields(app, what, name, obj, skip, options):
    """Leave out a named tuple's generated field entries ("Alias for field number 0").

    The class's ``Attributes`` section already describes each field.
    """
    if what == "class" and (getattr(obj, "__doc__", None) or "").startswith("Alias for field"):
        return True
    return None


def setup(app):
    """Connect the hooks above."""
    app.connect("autodoc-skip-member", skip_namedtuple_fields)
