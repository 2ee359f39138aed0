"""The book's tools: run them from the repository's root as modules (``python -m tools.build_chapters``);
the Makefile's targets do. ``tools.bilingual`` is the source format the chapters and the assignments share."""
