"""Build the book as a website: one book per language, and a page at the root to choose.

``make book`` runs this. From the one ``_config.yml`` and ``_toc.yml`` it writes, for each
language of ``_config.yml``'s ``languages:``, a configuration (everything in ``_config.yml``, then
that language's overrides) and a table of contents (the root ``chapters/<lang>/index``, the pages
under ``chapters/<lang>/`` in ``_toc.yml``'s order, then the shared pages such as the glossary),
and builds each with Jupyter Book's Sphinx build, both at once on two cores:

    _build/html/index.html         the landing page: the title, one line on what the book is and a
                                   link to the book, in each language
    _build/html/ko/...             the Korean book (its own search index, sidebar, figure numbers)
    _build/html/en/...             the English book

A page ``chapters/ko/06_family`` is ``_build/html/ko/chapters/ko/06_family.html``; its counterpart
``_build/html/en/chapters/en/06_family.html`` (book/site/site_pages.py puts the switch on every page).

    python -m book.site.website                 # both languages into _build/html (what make book runs)
    python -m book.site.website --out DIR       # the same site into DIR
    python -m book.site.website --lang ko       # one language only (the landing page is still written)
"""

from __future__ import annotations

import argparse
import copy
import html
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "_config.yml"
TOC = ROOT / "_toc.yml"
DEFAULT_OUT = ROOT / "_build" / "html"
WORK = ROOT / "_build" / "site"          # generated configurations, doctrees, logs


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def merged(base: dict, override: dict) -> dict:
    """``base`` with ``override`` laid over it, dictionaries merged key by key, anything else replaced."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def languages(config: dict) -> dict[str, dict]:
    langs = config.get("languages")
    if not isinstance(langs, dict) or not langs:
        raise SystemExit(f"{CONFIG.name}: expected a 'languages:' mapping (ko: ..., en: ...), "
                         f"found {type(langs).__name__}")
    return langs


def language_config(config: dict, lang: str) -> dict:
    """The configuration one language's book is built with (paths made absolute: the file lives
    under _build/site/<lang>/, the book's sources stay in the repository)."""
    base = {k: v for k, v in config.items() if k != "languages"}
    out = merged(base, languages(config)[lang])
    sphinx = out.setdefault("sphinx", {})
    sphinx["local_extensions"] = {name: str((ROOT / path).resolve())
                                  for name, path in (sphinx.get("local_extensions") or {}).items()}
    cfg = sphinx.setdefault("config", {})
    cfg["language"] = lang
    if "locale_dirs" in cfg:
        cfg["locale_dirs"] = [str((ROOT / d).resolve()) for d in cfg["locale_dirs"]]
    if "templates_path" in cfg:
        cfg["templates_path"] = [str((ROOT / d).resolve()) for d in cfg["templates_path"]]
    if out.get("html", {}).get("favicon"):
        out["html"]["favicon"] = str((ROOT / out["html"]["favicon"]).resolve())
    out["bibtex_bibfiles"] = [str((ROOT / b).resolve()) for b in out.get("bibtex_bibfiles", [])]
    return out


def toc_files(toc: dict) -> list[str]:
    """Every file of a table of contents, root first, in order (chapters, or parts of chapters)."""
    files = [toc["root"]] + [c["file"] for c in toc.get("chapters", [])]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    return files


def language_of(docname: str, langs) -> str | None:
    """The language a page belongs to (``chapters/ko/...`` -> ko), None for a shared page."""
    parts = docname.split("/")
    if len(parts) >= 3 and parts[0] == "chapters" and parts[1] in langs:
        return parts[1]
    return None


def language_toc(toc: dict, lang: str, langs) -> dict:
    """One language's table of contents: its index as the root, its pages, the shared pages."""
    root = f"chapters/{lang}/index"
    files = toc_files(toc)
    if root not in files:
        raise SystemExit(f"{TOC.name}: the {lang} book's root {root} is not listed")
    own = [f for f in files if language_of(f, langs) == lang and f != root]
    shared = [f for f in files if language_of(f, langs) is None]
    return {"format": "jb-book", "root": root, "chapters": [{"file": f} for f in own + shared]}


def write_inputs(lang: str, work: Path) -> tuple[Path, Path]:
    config = load(CONFIG)
    langs = languages(config)
    if lang not in langs:
        raise SystemExit(f"no language {lang!r} in {CONFIG.name} (languages: {', '.join(langs)})")
    folder = work / lang
    folder.mkdir(parents=True, exist_ok=True)
    cfg_path, toc_path = folder / "_config.yml", folder / "_toc.yml"
    note = f"# Generated by book/site/website.py from {CONFIG.name} and {TOC.name}: edit those, not this.\n"
    cfg_path.write_text(note + yaml.safe_dump(language_config(config, lang), allow_unicode=True,
                                              sort_keys=False), encoding="utf-8")
    toc_path.write_text(note + yaml.safe_dump(language_toc(load(TOC), lang, langs), allow_unicode=True,
                                              sort_keys=False), encoding="utf-8")
    return cfg_path, toc_path


def build_one(lang: str, work: Path) -> int:
    """Build one language's book into <work>/<lang>/html (in this process; -W, --keep-going).

    Not straight into the site: myst-nb writes the notebooks' images next to the output folder
    (<parent>/jupyter_execute), which must not end up in the site or be shared by two builds."""
    from jupyter_book.sphinx import build_sphinx

    cfg_path, toc_path = write_inputs(lang, work)
    # An output folder from before would leak into this build: Sphinx loads the searchindex.js it
    # finds there and keeps its words (with no pages), which made the Korean index 334 KB, not 193 KB.
    for old in ("html", "doctrees", "jupyter_execute"):
        shutil.rmtree(work / lang / old, ignore_errors=True)
    result = build_sphinx(
        ROOT, work / lang / "html", noconfig=True, path_config=str(cfg_path),
        confoverrides={"external_toc_path": toc_path.as_posix(), "latex_individualpages": False},
        doctreedir=work / lang / "doctrees", builder="html",
        warningiserror=True, keep_going=True, freshenv=True,   # ~10 s: never a stale page
    )
    return result if isinstance(result, int) else 1


LANDING = """<!DOCTYPE html>
<html lang="{first}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="icon" href="{favicon}">
<style>
  body {{ font-family: "NanumGothic", system-ui, sans-serif; margin: 0; min-height: 100vh;
         display: flex; align-items: center; justify-content: center; background: #fff; color: #222; }}
  main {{ max-width: 40rem; padding: 2rem 1.5rem; }}
  h1 {{ font-size: 1.9rem; margin: 0 0 1.5rem; line-height: 1.3; }}
  ul {{ list-style: none; padding: 0; margin: 0; display: grid; gap: 1rem; }}
  a {{ display: block; padding: 1rem 1.25rem; border: 2px solid #0a5cad; border-radius: .5rem;
       color: #0a4a8a; text-decoration: none; }}
  a:hover, a:focus {{ background: #eef5fc; outline: 3px solid #0a5cad; outline-offset: 2px; }}
  strong {{ display: block; font-size: 1.25rem; }}
  span {{ display: block; margin-top: .25rem; color: #333; }}
  p {{ margin: 0 0 1rem; line-height: 1.6; }}
  :lang(ko) {{ word-break: keep-all; }}
  ul {{ margin-top: 1.5rem; }}
  @media (prefers-color-scheme: dark) {{
    body {{ background: #121212; color: #e6e6e6; }}
    a {{ color: #9cc9f5; border-color: #6aa9e8; }}
    a:hover, a:focus {{ background: #1d2a38; }}
    span {{ color: #d0d0d0; }}
  }}
</style>
<link rel="stylesheet" href="{font_css}">
</head>
<body>
<main>
<h1>{heading}</h1>
{about}
<ul>
{links}
</ul>
</main>
</body>
</html>
"""


# What the book is, in one line of each language (the landing page says it before its links).
ABOUT = {
    "ko": "딥러닝의 정규화 층(BatchNorm, LayerNorm, RMSNorm과 그 친척들)을 공식과 손으로 푸는 작은 예제에서 "
          "시작해, torch.nn과 똑같이 동작하는 작은 라이브러리 normlib까지 따라가는 책입니다.",
    "en": "A book on the normalization layers of deep learning (BatchNorm, LayerNorm, RMSNorm and their "
          "relatives), from the formulas and small examples worked by hand to normlib, a small library "
          "that behaves exactly like torch.nn.",
}


def start_page(lang: str) -> str:
    return f"chapters/{lang}/index.html"


def redirect(config: dict, lang: str) -> str:
    """<out>/<lang>/index.html: the book's address, sending the browser to its first page (in
    place of sphinx-external-toc's bare one, with the page's language and a link to follow)."""
    title = html.escape(languages(config)[lang]["title"])
    target = start_page(lang)
    return (f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="refresh" content="0; url={target}">\n<title>{title}</title>\n'
            f'</head>\n<body><p><a href="{target}">{title}</a></p></body>\n</html>\n')


def landing_page(config: dict, built: list[str]) -> str:
    """The site's root: the book's title in each language, one line (ABOUT) on what it is, and a
    link to each book. No script, no cookie, no storage: it remembers nothing, and every visit
    offers both languages."""
    langs = languages(config)
    order = [lang for lang in langs if lang in built]
    items = []
    for lang in order:
        entry = langs[lang]
        items.append(
            f'<li lang="{lang}"><a href="{lang}/{start_page(lang)}" hreflang="{lang}">'
            f'<strong>{html.escape(entry["choose"])}</strong>'
            f'<span>{html.escape(entry["title"])}</span></a></li>')
    heading = " · ".join(f'<span lang="{lang}" style="display:inline">{html.escape(langs[lang]["title"])}</span>'
                         for lang in order)
    about = "\n".join(f'<p lang="{lang}">{html.escape(ABOUT[lang])}</p>' for lang in order if lang in ABOUT)
    first = order[0]
    font = f"{first}/_static/offline/nanum-gothic.css"
    return LANDING.format(first=first, title=html.escape(" · ".join(langs[lang]["title"] for lang in order)),
                          heading=heading, about=about, links="\n".join(items),
                          favicon=f"{first}/_static/" + Path(config["html"]["favicon"]).name,
                          font_css=font)


MARKER = ".normlib-site"     # in every folder this writes: it may empty that folder next time


def prepare(out: Path) -> None:
    """Start from an empty site folder: a page of an earlier build (the one-book layout's
    chapters/, another language) must not stay behind. Only a folder this tool wrote, or
    _build/html, is emptied; any other non-empty folder is refused."""
    if out.exists() and any(out.iterdir()):
        if not ((out / MARKER).exists() or out == DEFAULT_OUT):
            raise SystemExit(f"--out {out}: expected an empty folder or one book/site/website.py built "
                             f"(with {MARKER}), found other files there; choose another folder")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("Built by book/site/website.py (make book); emptied by its next build.\n",
                              encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the site's folder (default _build/html)")
    parser.add_argument("--lang", action="append", help="build only this language (repeatable)")
    parser.add_argument("--work", type=Path, default=WORK,
                        help="generated configurations, doctrees and logs (default _build/site)")
    parser.add_argument("--one", help=argparse.SUPPRESS)   # internal: build one language in this process
    args = parser.parse_args(argv)
    out, work = args.out.resolve(), args.work.resolve()
    if args.one:
        return build_one(args.one, work)

    config = load(CONFIG)
    wanted = args.lang or list(languages(config))
    for lang in wanted:
        languages(config).get(lang) or parser.error(f"no language {lang!r} in {CONFIG.name}")
    prepare(out)
    start = time.monotonic()
    procs = {}
    for lang in wanted:
        log = work / f"{lang}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        procs[lang] = (subprocess.Popen([sys.executable, "-m", "book.site.website", "--one", lang, "--work", str(work)],
                                        cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT), log)
    failed = []
    for lang, (proc, log) in procs.items():
        if proc.wait() != 0:
            failed.append(lang)
            sys.stdout.write(log.read_text(encoding="utf-8")[-6000:])
            print(f"\nThe {lang} book failed to build (whole log: {log}).", file=sys.stderr)
    if failed:
        return 1
    for lang in wanted:
        shutil.rmtree(out / lang, ignore_errors=True)
        shutil.copytree(work / lang / "html", out / lang)
        (out / lang / "index.html").write_text(redirect(config, lang), encoding="utf-8")
    (out / "index.html").write_text(landing_page(config, wanted), encoding="utf-8")
    print(f"Built {', '.join(wanted)} in {time.monotonic() - start:.0f} s into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
