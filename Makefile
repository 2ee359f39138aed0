# The two commands of the README: `make book` and `make test`. Each creates .venv from
# requirements.txt when it is missing (or older than requirements.txt / pyproject.toml).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
BOOK   := _build/html/index.html

.PHONY: help book test timings test-fast lint venv assets lab lab-teacher chapters notebooks perturbed serve clean bench bench-kernels bench-fused bench-fold bench-dyt bench-dyt-seeds bench-placement bench-lr-sweep page-weight \
	assignments assignments-release autograde feedback repository collect roster grades-export feedback-export \
	student

$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	@# setuptools prints a banner about editable installs even with --quiet; it says nothing to act on
	PYTHONWARNINGS=ignore::UserWarning $(PY) -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

# `make` alone prints the list of targets below (make help); `make venv` only creates the environment.
.DEFAULT_GOAL := help

## Print every target with its ## comment: this list (`make` alone prints it too). It is read from the
## Makefile's own ## lines, so a target documented here is documented there.
help:
	@awk '/^## /{c = c (c ? "\n" : "") substr($$0, 4); next} /^$$/{c = ""; next} \
	     /^[a-z][a-z0-9-]*:/{t = substr($$1, 1, index($$1, ":") - 1); n = split(c, l, "\n"); \
	     printf "%-20s %s\n", t, l[1]; for (i = 2; i <= n; i++) printf "%-20s %s\n", "", l[i]; c = ""}' \
	     $(firstword $(MAKEFILE_LIST))

## Only create .venv from requirements.txt and install normlib into it in editable mode (every target
## does this first when .venv is missing or older than requirements.txt / pyproject.toml).
venv: $(STAMP)

## Build the HTML book (from the committed, executed notebooks) and say where to open it: one book per
## language (book/site/website.py: _build/html/ko/, _build/html/en/, a landing page _build/html/index.html).
## The build itself vendors MathJax, RequireJS, the widget manager and the Korean web font
## (book/site/vendor_assets.py, a Sphinx extension of the book: npm ci when needed), so the book
## loads nothing from other hosts.
book: $(STAMP)
	$(PY) -m book.site.website
	@echo ""
	@echo "The book is built. Open $(abspath $(BOOK)) in a browser,"
	@echo "or run 'make serve' and visit http://127.0.0.1:8000/"
	@if grep -q "_static/offline/nanum-gothic.css" _build/html/ko/chapters/ko/index.html; then \
		echo "It loads nothing from other hosts (MathJax, widgets and the Korean font are in _static/offline/)."; \
	else \
		echo "It loads MathJax, require.js and the widget manager from CDNs (no npm, see above): it needs a network."; \
	fi

## Only vendor the book's browser assets (npm ci when needed, copy into book_assets/) and print their sizes.
assets: $(STAMP)
	$(PY) -m book.site.vendor_assets

## Every test: pytest on tests/ (the book build with -W included), normlib's doctests,
## and nbval on every chapter notebook in a fresh kernel. Two pytest-xdist workers (WORKERS=N for
## more, WORKERS=0 for one process); tests/conftest.py says what stays together and what goes first.
WORKERS ?= 2
TEST_ALL = tests normlib chapters --doctest-modules \
	--nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
	-n $(WORKERS) --dist loadscope
test: $(STAMP)
	$(PY) -m pytest $(TEST_ALL)

## Every test, as make test runs them, and each group's time in that run written to tests/TIMINGS.md
## (tests/timings.py, from the run's own durations; make test itself writes nothing).
timings: $(STAMP)
	$(PY) -m pytest $(TEST_ALL) --timings=tests/TIMINGS.md

## The fast loop for contributors (under a minute on 2 cores): the library tests, normlib's doctests
## and the chapter source/pair tests, i.e. every test not marked slow (tests/conftest.py): no notebook
## executed, no book built, no browser, no nbgrader, no processes. WORKERS=0 runs them in one process.
test-fast: $(STAMP)
	$(PY) -m pytest tests normlib --doctest-modules -m "not slow" -n $(WORKERS) --dist worksteal

## Lint the Python sources with ruff (pinned in requirements.txt, configured in pyproject.toml);
## `make lint FIX=1` applies ruff's safe fixes. tests/repository/test_lint.py runs the same check in make test.
lint: $(STAMP)
	$(VENV)/bin/ruff check . $(if $(FIX),--fix,)

## Open copies of the chapters in JupyterLab, without nbgrader's teacher tools (book/tools/lab.py): lab/ (git-ignored)
## gets the chapters it lacks and keeps the reader's edited ones, so running never changes chapters/.
## FRESH=1 copies every chapter afresh, keeping the reader's copies in lab/backup/<time>/.
lab: $(STAMP)
	$(PY) -m book.tools.lab reader $(if $(FRESH),--fresh,)

## A student's working copy of an assignment (the student version: no solutions, no hidden tests), written to
## lab/assignments/<assignment>/ for make lab; a copy already there is the student's work and is kept (classroom/tools/student.py).
student: $(STAMP)
	@test -n "$(A)" || { $(PY) -m classroom.tools.student; exit 2; }
	$(PY) -m classroom.tools.student $(A)

## Open the course folder classroom/course/ in JupyterLab with nbgrader's tools (Formgrader, Create Assignment).
lab-teacher: $(STAMP)
	$(PY) -m book.tools.lab teacher

## Regenerate the ko/en notebook pairs from chapters/src/*.md and execute them (CH=03_batchnorm for one).
chapters: $(STAMP)
	$(PY) -m book.tools.build_chapters $(CH)
	$(PY) -m book.tools.execute_notebooks $(if $(CH),chapters/ko/$(CH).ipynb chapters/en/$(CH).ipynb,)

## Re-execute every chapter notebook in place, storing outputs.
notebooks: $(STAMP)
	$(PY) -m book.tools.execute_notebooks

## Re-execute every chapter (or CH=01_why_normalize) under other numerics (another thread count,
## ATen's non-vectorised kernels, narrow-vector matrix products) and compare what nbval compares:
## an output that changes here changes on another CPU (make test's nbval runs each chapter so in one language).
perturbed: $(STAMP)
	$(PY) -m book.tools.perturbed_numerics $(if $(CH),chapters/ko/$(CH).ipynb chapters/en/$(CH).ipynb,)

## Time LayerNorm, RMSNorm and BatchNorm2d four ways against torch's built-in, on one thread (about 5 minutes);
## writes benchmarks/results/normalization.{md,json,png} and roofline.png.
bench: $(STAMP)
	$(PY) benchmarks/normalization.py

## Measure what chapter 8's passes × bytes ÷ bandwidth leaves out: allocation, BatchNorm's serial statistics loop,
## a fixed cost per operation (one thread; under a minute); writes benchmarks/results/kernels.{md,json}.
bench-kernels: $(STAMP)
	$(PY) benchmarks/kernels.py

## Time chapter 12's fused LayerNorm/RMSNorm kernel (normlib_book.fused) against torch's kernels, torch.compile's
## and the memory limit, with the chapter's steps, at torch's thread count (one to two minutes; compiles the
## kernel first if needed); writes benchmarks/results/fused.{md,json}, which chapter 12 reads.
bench-fused: $(STAMP)
	$(PY) benchmarks/fused.py

## Time conv + BatchNorm in evaluation mode against the folded conv (chapter 10; under a minute);
## writes benchmarks/results/fold.{md,json}.
bench-fold: $(STAMP)
	$(PY) benchmarks/fold.py

## Time DyT against LayerNorm and RMSNorm, readable, compiled and torch's (chapter 11; a few minutes);
## writes benchmarks/results/dyt.{md,json}.
bench-dyt: $(STAMP)
	$(PY) benchmarks/dyt.py

## Train chapter 11's tiny transformer with LayerNorm and with DyT over 20 seeds, and its causal language model
## over 10 (float64, one thread; several minutes); writes benchmarks/results/dyt_seeds.{md,json}, which chapter 11 reads.
bench-dyt-seeds: $(STAMP)
	$(PY) benchmarks/dyt_seeds.py

## Train chapter 10's tiny transformer post-norm and pre-norm, with and without warmup, and its controls
## (RAdam, a smaller learning rate, depths 2-4) over 10 seeds, and measure its gradients at initialization
## over 20 seeds (float64, one thread; about 6 minutes); writes benchmarks/results/placement.{md,json},
## which chapter 10 reads.
bench-placement: $(STAMP)
	$(PY) benchmarks/placement.py

## Train chapter 1's three networks over 20 seeds at 4 learning rates, and on raw inputs with two controls,
## float64 on one thread (about 20 minutes); writes benchmarks/results/lr_sweep.{md,json}, which chapter 1 reads.
bench-lr-sweep: $(STAMP)
	$(PY) benchmarks/lr_sweep.py

## Build the book as make book does, then weigh each page's first load in headless Chromium (a minute or two):
## writes benchmarks/results/page_weight.{md,json} whole, with the gzip column of page_weight_before.json.
page-weight: book
	$(PY) -m benchmarks.tools.page_weight --json benchmarks/results/page_weight.json \
		--markdown benchmarks/results/page_weight.md --before benchmarks/results/page_weight_before.json

## After changing repository.url (or .branch) in _config.yml: rewrite every copy the notebooks embed (the
## chapters' and the assignments' install cell, the chapters' links to the library), executing nothing
## (book/tools/repository.py). CHECK=1 changes nothing and fails naming every notebook that differs.
repository: $(STAMP)
	$(PY) -m book.tools.repository $(if $(CHECK),--check)

## Regenerate the Korean and English nbgrader source notebooks from classroom/course/src/*.md (A=01_layernorm for one).
assignments: $(STAMP)
	$(PY) -m classroom.tools.build_assignments $(A)

# The classroom (classroom/README.md): nbgrader runs inside the course folder COURSE. Name
# assignments with ASSIGNMENTS="02_batchnorm_ko 04_axes_groupnorm_ko" (default: all of source/).
COURSE      ?= classroom/course
ASSIGNMENTS ?=
CLASSROOM   := $(PY) classroom/tools/classroom.py

## Write the student versions into classroom/course/release/ (nbgrader generate_assignment: solutions and
## hidden tests stripped), then nbgrader validate: each source must score full marks, each release zero.
assignments-release: $(STAMP)
	$(CLASSROOM) release --course $(COURSE) $(ASSIGNMENTS)

## Autograde classroom/course/submitted/<student>/<assignment>/ (nbgrader autograde; TIMEOUT=seconds per
## cell overrides nbgrader_config.py, FORCE=1 regrades) and write the assignments graded (those with
## submissions, or ASSIGNMENTS) to classroom/course/grades.csv: one row per student, graded / not submitted /
## not graded, UTF-8 with a byte order mark for Excel. Whatever is in the wrong place is named with what
## to do (exit status 1); everyone else is graded.
autograde: $(STAMP)
	$(CLASSROOM) autograde --course $(COURSE) $(if $(TIMEOUT),--timeout $(TIMEOUT)) $(if $(FORCE),--force) $(ASSIGNMENTS)

## One feedback page per student and notebook: classroom/course/feedback/<student>/<assignment>/*.html.
feedback: $(STAMP)
	$(CLASSROOM) feedback --course $(COURSE) $(if $(FORCE),--force) $(ASSIGNMENTS)

## File a learning platform's bulk download of submissions (Moodle, Canvas, Google Classroom, or a folder of
## <id>.ipynb) at classroom/course/submitted/<student id>/<assignment>/ (classroom/tools/collect.py): make collect
## ZIP=<download.zip> ASSIGNMENT=01_layernorm_ko. What it cannot place is kept in classroom/course/collected/ and named;
## ASSIGN="<file>:<student id>" (several: separated by ;) places such a file. A file older than the one there is
## kept aside, not put in place (FORCE=1 puts it in place).
collect: $(STAMP)
	@test -n "$(ZIP)" -a -n "$(ASSIGNMENT)" || { echo "make collect needs ZIP=<the platform's download> ASSIGNMENT=<e.g. 01_layernorm_ko>"; exit 2; }
	$(PY) -m classroom.tools.collect "$(ZIP)" $(ASSIGNMENT) --course $(COURSE) $(if $(ASSIGN),--assign "$(ASSIGN)") $(if $(FORCE),--force)

## Write classroom/course/students.csv from the platform's class list as exported (CSV in UTF-8, UTF-16 or CP949;
## Korean or English headers): make roster FILE=<export.csv> (classroom/tools/roster.py). ADD=1 merges it by id into the
## list there (a course on several platforms, or a university list and a platform's); without ADD, a different
## list there is kept as students.<time>.csv before it is replaced. PLATFORM=moodle|canvas|list when the headers
## do not say it.
roster: $(STAMP)
	@test -n "$(FILE)" || { echo "make roster needs FILE=<the platform's class list, exported as CSV>"; exit 2; }
	$(PY) -m classroom.tools.roster "$(FILE)" --course $(COURSE) $(if $(ADD),--add) $(if $(PLATFORM),--platform $(PLATFORM))

## The grades of one assignment as the platform imports them: make grades-export PLATFORM=moodle|canvas|simple
## ASSIGNMENT=01_layernorm_ko [MISSING=zero] [COLUMN="Assignment 1 (12345)"] [SECTION=01,02]; writes
## classroom/course/export/: only the students of that platform (or sections); the not graded are left out, and the not
## submitted unless MISSING=zero (an empty cell would clear a grade typed in the platform), each named.
grades-export: $(STAMP)
	@test -n "$(PLATFORM)" -a -n "$(ASSIGNMENT)" || { echo "make grades-export needs PLATFORM=moodle|canvas|simple ASSIGNMENT=<e.g. 01_layernorm_ko>"; exit 2; }
	$(PY) -m classroom.tools.platform_export grades $(PLATFORM) $(ASSIGNMENT) --course $(COURSE) $(if $(MISSING),--missing $(MISSING)) $(if $(COLUMN),--column "$(COLUMN)") $(if $(SECTION),--section "$(SECTION)")

## The feedback pages of one assignment in one zip, each named with the student's file prefix from the platform's
## download (Moodle, Canvas's re-upload): make feedback-export PLATFORM=moodle|canvas|google|simple ASSIGNMENT=...
## Names who is left out, and who handed something in but has no page (not graded).
feedback-export: $(STAMP)
	@test -n "$(PLATFORM)" -a -n "$(ASSIGNMENT)" || { echo "make feedback-export needs PLATFORM=moodle|canvas|google|simple ASSIGNMENT=<e.g. 01_layernorm_ko>"; exit 2; }
	$(PY) -m classroom.tools.platform_export feedback $(PLATFORM) $(ASSIGNMENT) --course $(COURSE)

## Serve the built book on http://127.0.0.1:8000/ (builds it first when _build/html/index.html is missing).
serve: $(BOOK)
	$(PY) -m http.server --bind 127.0.0.1 --directory _build/html 8000

$(BOOK):
	$(MAKE) book

## Remove what make book writes: _build/ and book_assets/ (the vendored browser assets).
clean:
	rm -rf _build book_assets
