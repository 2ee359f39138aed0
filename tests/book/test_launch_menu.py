"""The chapter pages' launch menu: Binder and Colab always, a JupyterHub entry only when a course
has set its hub (_config.yml's launch_buttons.jupyterhub_url, empty by default).

The menu is made by sphinx-book-theme's own functions, run here on the configuration each
language's book is built with (book/site/website.py's language_config, then Jupyter Book's
translation to Sphinx): no build needed. The built pages are checked by the last test."""

from __future__ import annotations

import copy
import re
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from jupyter_book.config import yaml_to_sphinx
from sphinx_book_theme.header_buttons import update_context_with_repository_info
from sphinx_book_theme.header_buttons.launch import add_launch_buttons

from book.site import website
from helpers.paths import ROOT

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
LANGS = tuple(website.languages(CONFIG))
HUB = "https://jupyter.some-university.ac.kr"


class _Config(dict):
    """Sphinx's config as the theme reads it: both config["key"] and config.key."""
    def __getattr__(self, name):
        return self[name]


def launch_menu(config: dict, lang: str, page: str = "03_batchnorm") -> dict[str, str]:
    """The launch menu sphinx-book-theme puts on chapter ``page`` of ``lang``'s book: text -> URL."""
    sphinx_config = yaml_to_sphinx(website.language_config(config, lang))[0]
    options = sphinx_config["html_theme_options"]
    docname = f"chapters/{lang}/{page}"
    app = SimpleNamespace(
        builder=None,
        config=_Config(html_theme_options=options, html_context={}),
        env=SimpleNamespace(doc2path=lambda name: str(ROOT / f"{name}.ipynb"),
                            metadata={docname: {"kernelspec": {"name": "python3"}}}),
    )
    update_context_with_repository_info(app)
    context = {**app.config.html_context, "pagename": docname, "header_buttons": [],
               "sourcename": f"{docname}.ipynb", "page_source_suffix": ".ipynb"}
    add_launch_buttons(app, docname, "page.html", context, None)
    groups = [b for b in context["header_buttons"] if b.get("label") == "launch-buttons"]
    assert len(groups) == 1, f"no launch menu on {docname}: {context['header_buttons']}"
    return {b["text"]: b["url"] for b in groups[0]["buttons"]}


def with_hub(url) -> dict:
    config = copy.deepcopy(CONFIG)
    config["launch_buttons"]["jupyterhub_url"] = url
    return config


def test_the_default_hub_is_empty():
    assert CONFIG["launch_buttons"].get("jupyterhub_url", "") == "", (
        "the committed _config.yml sets a JupyterHub: only a course that has one should")


@pytest.mark.parametrize("lang", LANGS)
def test_the_default_menu_has_binder_and_colab_and_no_jupyterhub(lang):
    menu = launch_menu(CONFIG, lang)
    assert sorted(menu) == ["Binder", "Colab"], menu
    assert "git-pull" not in " ".join(menu.values())


@pytest.mark.parametrize("lang", LANGS)
def test_a_course_hub_gets_its_entry(lang):
    menu = launch_menu(with_hub(HUB + "/"), lang)
    assert sorted(menu) == ["Binder", "Colab", "JupyterHub"], menu
    link = urlsplit(menu["JupyterHub"])
    assert f"{link.scheme}://{link.netloc}" == HUB and link.path == "/hub/user-redirect/git-pull", menu["JupyterHub"]
    query = parse_qs(link.query)
    assert query["repo"] == [CONFIG["repository"]["url"]]
    assert query["branch"] == [CONFIG["repository"]["branch"]]
    assert query["urlpath"][0].endswith(f"chapters/{lang}/03_batchnorm.ipynb"), query


@pytest.mark.parametrize("empty", ["", "/"])
def test_an_empty_hub_is_no_hub(empty):
    assert "JupyterHub" not in launch_menu(with_hub(empty), LANGS[0])


@pytest.mark.site
@pytest.mark.parametrize("lang", LANGS)
def test_the_built_chapter_pages_link_to_no_jupyterhub(built_site, lang):
    pages = sorted((built_site / lang / "chapters" / lang).glob("[0-9][0-9]_*.html"))
    assert len(pages) == len(list((ROOT / "chapters" / lang).glob("[0-9][0-9]_*.ipynb"))), pages
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert "mybinder.org/v2/gh/" in html and "colab.research.google.com/github/" in html, page
        assert not re.search(r"git-pull|user-redirect|logo_jupyterhub", html), f"{page}: a JupyterHub entry"
