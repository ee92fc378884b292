"""Fail the docs build when a public name is undocumented.

A module is public when no part of its dotted name starts with an underscore.
Every name a public module exports (its ``__all__``, or else the public names
it defines) must be described somewhere on the site. Functions must also carry the sections every
API page shows: ``Args`` (when they take any), ``Returns``, and an ``Example``
with a doctest, which pytest runs. Each miss is a Sphinx warning, so
``sphinx-build -W`` stops on it.
"""

import importlib
import inspect
import pkgutil
import re

PACKAGE = "lodestar"


def public_modules(package_name):
    """The package and every submodule of it whose dotted name has no private part."""
    package = importlib.import_module(package_name)
    names = [package_name]
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{package_name}."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return [importlib.import_module(name) for name in names]


def exported_names(module):
    """``__all__``, or else the public names the module defines, as autosummary reads them."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [
        name
        for name, member in vars(module).items()
        if not name.startswith("_") and getattr(member, "__module__", None) == module.__name__
    ]


def _has_section(docstring, *titles):
    return any(re.search(rf"^\s*{title}:\s*$", docstring, re.MULTILINE) for title in titles)


def missing_sections(function):
    """The docstring sections an API page needs that ``function`` lacks."""
    docstring = inspect.getdoc(function) or ""
    missing = []
    takes_arguments = bool(inspect.signature(function).parameters)
    if takes_arguments and not _has_section(docstring, "Args", "Arguments"):
        missing.append("Args")
    if not _has_section(docstring, "Returns", "Yields"):
        missing.append("Returns")
    if not _has_section(docstring, "Example", "Examples") or ">>>" not in docstring:
        missing.append("Example (with a doctest)")
    return missing


def problems(documented):
    """Every coverage problem, given the set of documented Python object names."""
    found = []
    for module in public_modules(PACKAGE):
        if module.__name__ not in documented:
            found.append(f"module {module.__name__} has no page in the API reference")
        for name in exported_names(module):
            member = getattr(module, name)
            if inspect.ismodule(member):
                continue  # Documented on its own page, checked as a module.
            qualified = f"{module.__name__}.{name}"
            if qualified not in documented:
                found.append(f"{qualified} is in __all__ but not in the API reference")
            elif not inspect.getdoc(member):
                found.append(f"{qualified} has no docstring")
            elif inspect.isfunction(member):
                for section in missing_sections(member):
                    found.append(f"{qualified}'s docstring lacks a {section} section")
    return found


def check_coverage(app, env):
    """``env-check-consistency`` handler: warn once per coverage problem."""
    # Imported here so that the rule itself runs without Sphinx, under pytest.
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    documented = set(env.get_domain("py").objects)
    for problem in problems(documented):
        logger.warning("API coverage: %s", problem, type="api_coverage")


def setup(app):
    """Register the check with Sphinx."""
    app.connect("env-check-consistency", check_coverage)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
